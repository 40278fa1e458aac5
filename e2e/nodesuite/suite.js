// Tabula's run of the Node.js Bigtable client (@google-cloud/bigtable,
// pinned in package.json and package-lock.json) against tabula dev's
// Bigtable gateway: the client's documented operations (its README and the
// JSDoc of Bigtable, Instance, Table, Family, Row and Filter), each a test
// of node:test. e2e TestNodeClientSuite runs it and holds the outcome of
// every test to its lists; docs/GATEWAY.md ("Google's own client tests")
// says why.
//
// The client's own system tests (system-test/ of googleapis/nodejs-bigtable)
// are not in the npm package, and no package registry has them, so this
// file is written here, against the client's documentation only.
//
// The client is set up exactly as its emulator instructions say:
// BIGTABLE_EMULATOR_HOST in the environment and `new Bigtable()` without a
// project id, so every name it sends starts with the literal
// "projects/{{projectId}}/".
//
// Run: BIGTABLE_EMULATOR_HOST=HOST:PORT NODE_PATH=.tools/nodesuite/node_modules \
//   node --test-reporter=./e2e/nodesuite/reporter.mjs e2e/nodesuite/suite.js
'use strict';

const assert = require('node:assert/strict');
const {test, after} = require('node:test');
const {Bigtable} = require('@google-cloud/bigtable');

if (!process.env.BIGTABLE_EMULATOR_HOST) {
  throw new Error('BIGTABLE_EMULATOR_HOST is not set: this suite runs only against an emulator-mode endpoint');
}

const bigtable = new Bigtable();
const suffix = process.env.NODESUITE_SUFFIX || String(process.pid);
const instance = bigtable.instance('nodesuite');
const table = instance.table('node-' + suffix);
const scratch = instance.table('node-scratch-' + suffix);

after(() => bigtable.close());

// rowsOf reads rows with getRows and returns them as {key: {fam: {col: [values]}}}.
async function rowsOf(t, opts) {
  const [rows] = await t.getRows(opts);
  const out = {};
  for (const row of rows) {
    const fams = {};
    for (const [fam, cols] of Object.entries(row.data)) {
      fams[fam] = {};
      for (const [col, cells] of Object.entries(cols)) {
        fams[fam][col] = cells.map(c => c.value);
      }
    }
    out[row.id] = fams;
  }
  return out;
}

function keysOf(rows) {
  return Object.keys(rows);
}

// code reads the status code of the error p rejects with (0 if it
// resolves): a gRPC code, the client's 404 for a missing row, or, for a
// PartialFailureError of a MutateRows, the first entry's gRPC code.
async function code(p) {
  try {
    await p;
  } catch (e) {
    return e.errors ? e.errors[0].code : e.code;
  }
  return 0;
}

test('setup: names carry the literal {{projectId}}', () => {
  assert.ok(table.name.startsWith('projects/{{projectId}}/instances/nodesuite/tables/'), table.name);
});

test('admin: createTable with families and GC rules', async () => {
  const [t] = await instance.createTable(table.id, {
    families: [
      {name: 'follows', rule: {versions: 2}},
      {name: 'traits', rule: {age: {seconds: 3600}, versions: 3, union: true}},
      'plain',
    ],
  });
  assert.equal(t.id, table.id);
});

test('admin: table.exists', async () => {
  assert.deepEqual(await table.exists(), [true]);
  assert.deepEqual(await instance.table('node-missing-' + suffix).exists(), [false]);
});

test('admin: instance.getTables lists the table', async () => {
  const [tables] = await instance.getTables();
  assert.ok(tables.some(t => t.id === table.id), 'tables: ' + tables.map(t => t.id));
});

test('admin: table.getMetadata', async () => {
  const [md] = await table.getMetadata({view: 'schema'});
  assert.deepEqual(Object.keys(md.columnFamilies).sort(), ['follows', 'plain', 'traits']);
  assert.equal(md.columnFamilies.follows.gcRule.maxNumVersions, 2);
});

test('admin: table.getFamilies', async () => {
  const [fams] = await table.getFamilies();
  assert.deepEqual(fams.map(f => f.id).sort(), ['follows', 'plain', 'traits']);
});

test('admin: table.createFamily with a GC rule', async () => {
  const [fam] = await table.createFamily('extra', {rule: {versions: 1}});
  assert.equal(fam.id, 'extra');
  const [md] = await fam.getMetadata();
  assert.equal(md.gcRule.maxNumVersions, 1);
});

test('admin: family.exists and family.get', async () => {
  assert.deepEqual(await table.family('extra').exists(), [true]);
  assert.deepEqual(await table.family('nosuch').exists(), [false]);
  const [fam] = await table.family('extra').get();
  assert.equal(fam.id, 'extra');
});

test('admin: family.setMetadata changes the GC rule', async () => {
  const fam = table.family('extra');
  await fam.setMetadata({rule: {versions: 4}});
  const [md] = await fam.getMetadata();
  assert.equal(md.gcRule.maxNumVersions, 4);
});

test('admin: family.setMetadata with an intersection rule', async () => {
  const fam = table.family('extra');
  await fam.setMetadata({rule: {versions: 2, age: {seconds: 60}, intersection: true}});
  const [md] = await fam.getMetadata();
  assert.equal(md.gcRule.intersection.rules.length, 2);
});

test('admin: family.delete', async () => {
  await table.family('extra').delete();
  assert.deepEqual(await table.family('extra').exists(), [false]);
});

test('admin: createTable with splits', async () => {
  // Buffers: the client hands string splits to a bytes field as they are,
  // and protobuf.js reads a string there as base64.
  await instance.createTable(scratch.id, {families: ['cf'], splits: [Buffer.from('g'), Buffer.from('p')]});
  const [keys] = await scratch.sampleRowKeys();
  assert.ok(keys.length >= 1);
});

test('admin: createTable of an existing table is ALREADY_EXISTS', async () => {
  assert.equal(await code(instance.createTable(scratch.id, {families: ['cf']})), 6);
});

test('admin: generateConsistencyToken and checkConsistency', async () => {
  const [token] = await table.generateConsistencyToken();
  assert.ok(token);
  const [consistent] = await table.checkConsistency(token);
  assert.equal(consistent, true);
});

test('admin: waitForReplication', async () => {
  const [done] = await table.waitForReplication();
  assert.equal(done, true);
});

test('admin: getReplicationStates', async () => {
  const [states] = await table.getReplicationStates();
  assert.ok(states.size >= 1);
});

test('instance: bigtable.getInstances', async () => {
  const [instances] = await bigtable.getInstances();
  assert.ok(instances.length >= 1);
});

test('instance: instance.getClusters', async () => {
  const [clusters] = await instance.getClusters();
  assert.ok(clusters.length >= 1);
});

test('instance: instance.exists', async () => {
  assert.deepEqual(await instance.exists(), [true]);
});

test('data: table.insert of several rows', async () => {
  await table.insert([
    {key: 'alincoln', data: {follows: {gwashington: 1}, traits: {name: 'Abraham'}}},
    {key: 'gwashington', data: {follows: {jadams: 1}, traits: {name: 'George'}}},
    {key: 'jadams', data: {follows: {gwashington: 1, tjefferson: 1}, traits: {name: 'John'}}},
    {key: 'tjefferson', data: {follows: {gwashington: 1, jadams: 1}, traits: {name: 'Thomas'}}},
  ]);
  const rows = await rowsOf(table);
  assert.deepEqual(keysOf(rows), ['alincoln', 'gwashington', 'jadams', 'tjefferson']);
  assert.deepEqual(rows.jadams.traits.name, ['John']);
});

test('data: table.mutate with an explicit timestamp', async () => {
  await table.mutate({
    key: 'ts',
    method: 'insert',
    data: {plain: {when: {value: 'then', timestamp: new Date(1_000_000)}}},
  });
  const [row] = await table.row('ts').get();
  assert.equal(row.data.plain.when[0].value, 'then');
  assert.equal(String(row.data.plain.when[0].timestamp), '1000000000');
});

test('data: row.get of one row', async () => {
  const [row] = await table.row('alincoln').get();
  assert.equal(row.data.traits.name[0].value, 'Abraham');
});

test('data: row.get of named columns', async () => {
  const [data] = await table.row('jadams').get(['follows:tjefferson']);
  assert.deepEqual(Object.keys(data.follows), ['tjefferson']);
});

test('data: row.get of a missing row is the client\'s 404', async () => {
  assert.equal(await code(table.row('nobody').get()), 404);
});

test('data: row.exists', async () => {
  assert.deepEqual(await table.row('alincoln').exists(), [true]);
  assert.deepEqual(await table.row('nobody').exists(), [false]);
});

test('data: row.getMetadata of a missing row is the client\'s 404', async () => {
  await table.row('alincoln').getMetadata(); // 7.2.0 answers undefined for a row that exists
  assert.equal(await code(table.row('nobody').getMetadata()), 404);
});

test('data: row.create', async () => {
  const row = table.row('created');
  await row.create({entry: {traits: {name: 'New'}}});
  const [data] = await row.get(['traits:name']);
  assert.equal(data.traits.name[0].value, 'New');
});

test('data: row.save', async () => {
  const row = table.row('created');
  await row.save({traits: {title: 'President'}});
  const [data] = await row.get(['traits:title']);
  assert.equal(data.traits.title[0].value, 'President');
});

test('data: row.increment', async () => {
  const row = table.row('counter');
  const [v1] = await row.increment('plain:hits');
  const [v2] = await row.increment('plain:hits', 10);
  assert.equal(v1, 1);
  assert.equal(v2, 11);
});

test('data: row.createRules with append and increment', async () => {
  const row = table.row('rules');
  await row.save({plain: {s: 'ab'}});
  const [res] = await row.createRules([
    {column: 'plain:s', append: 'cd'},
    {column: 'plain:n', increment: 5},
  ]);
  assert.ok(res);
  const [data] = await row.get(['plain:s']);
  assert.equal(data.plain.s[0].value, 'abcd');
});

// row.filter is a CheckAndMutateRow: onMatch runs when the filter finds a
// cell in the row, onNoMatch otherwise.
for (const [name, key, value, want] of [
  ['runs onMatch mutations when the filter matches', 'gwashington', 'George', true],
  ['runs onNoMatch mutations otherwise', 'jadams', 'Nobody', false],
]) {
  test('data: row.filter ' + name, async () => {
    const row = table.row(key);
    const [matched] = await row.filter([{column: 'name'}, {value}], {
      onMatch: [{method: 'insert', data: {traits: {matched: 'yes'}}}],
      onNoMatch: [{method: 'insert', data: {traits: {matched: 'no'}}}],
    });
    assert.equal(matched, want);
    const [data] = await row.get(['traits:matched']);
    assert.equal(data.traits.matched[0].value, want ? 'yes' : 'no');
  });
}

test('data: row.deleteCells of a column', async () => {
  const row = table.row('created');
  await row.deleteCells(['traits:title']);
  const [data] = await row.get();
  assert.deepEqual(Object.keys(data.data.traits), ['name']);
});

test('data: row.deleteCells of a family', async () => {
  const row = table.row('rules');
  await row.deleteCells(['plain']);
  assert.deepEqual(await row.exists(), [false]);
});

test('data: row.delete', async () => {
  await table.row('created').delete();
  assert.deepEqual(await table.row('created').exists(), [false]);
});

test('data: versions beyond the GC rule are not read', async () => {
  const row = table.row('versions');
  for (let i = 1; i <= 3; i++) {
    await table.mutate({key: 'versions', method: 'insert', data: {follows: {v: {value: 'v' + i, timestamp: new Date(i * 1000)}}}});
  }
  const [data] = await row.get(['follows:v']);
  assert.deepEqual(data.follows.v.map(c => c.value), ['v3', 'v2']);
});

test('data: a write to an unknown family is NOT_FOUND', async () => {
  assert.equal(await code(table.row('x').save({nosuch: {c: 'v'}})), 5);
});

test('read: getRows with keys', async () => {
  const rows = await rowsOf(table, {keys: ['jadams', 'alincoln', 'nobody']});
  assert.deepEqual(keysOf(rows), ['alincoln', 'jadams']);
});

test('read: getRows with a range', async () => {
  const rows = await rowsOf(table, {start: 'b', end: 'k'});
  assert.deepEqual(keysOf(rows), ['counter', 'gwashington', 'jadams']);
});

test('read: getRows with an exclusive range', async () => {
  const rows = await rowsOf(table, {ranges: [{start: {value: 'gwashington', inclusive: false}, end: {value: 'jadams', inclusive: true}}]});
  assert.deepEqual(keysOf(rows), ['jadams']);
});

test('read: getRows with several ranges', async () => {
  const rows = await rowsOf(table, {ranges: [{start: 'a', end: 'b'}, {start: 't', end: 'u'}]});
  assert.deepEqual(keysOf(rows), ['alincoln', 'tjefferson', 'ts']);
});

test('read: getRows with a prefix', async () => {
  const rows = await rowsOf(table, {prefix: 't'});
  assert.deepEqual(keysOf(rows), ['tjefferson', 'ts']);
});

test('read: getRows with prefixes', async () => {
  const rows = await rowsOf(table, {prefixes: ['al', 'ja']});
  assert.deepEqual(keysOf(rows), ['alincoln', 'jadams']);
});

test('read: getRows with a limit', async () => {
  const rows = await rowsOf(table, {limit: 2});
  assert.deepEqual(keysOf(rows), ['alincoln', 'counter']);
});

test('read: createReadStream', async () => {
  const keys = [];
  await new Promise((resolve, reject) => {
    table.createReadStream({start: 'g'})
      .on('error', reject)
      .on('data', row => keys.push(row.id))
      .on('end', resolve);
  });
  assert.deepEqual(keys, ['gwashington', 'jadams', 'tjefferson', 'ts', 'versions']);
});

test('read: createReadStream ended early', async () => {
  const keys = [];
  await new Promise((resolve, reject) => {
    const stream = table.createReadStream();
    stream.on('error', reject).on('data', row => {
      keys.push(row.id);
      if (keys.length === 2) {
        stream.end();
      }
    }).on('end', resolve);
  });
  assert.equal(keys.length, 2);
});

test('read: getRows with decode false returns buffers', async () => {
  const [rows] = await table.getRows({keys: ['alincoln'], decode: false});
  assert.ok(Buffer.isBuffer(rows[0].data.traits.name[0].value));
});

test('read: sampleRowKeys', async () => {
  const [keys] = await table.sampleRowKeys();
  assert.ok(keys.length >= 1);
  assert.ok(keys.every(k => k.offset !== undefined));
});

test('read: sampleRowKeysStream', async () => {
  const keys = [];
  await new Promise((resolve, reject) => {
    table.sampleRowKeysStream().on('error', reject).on('data', k => keys.push(k)).on('end', resolve);
  });
  assert.ok(keys.length >= 1);
});

// Filters, each as the client's Filter documentation writes it. A regular
// expression must match the whole key, family, qualifier or value (RE2,
// anchored at both ends, as in Bigtable).
const filterCases = [
  ['row key regex', {row: /[aj].*/}, ['alincoln', 'jadams']],
  ['row key list', {row: ['alincoln', 'jadams']}, ['alincoln', 'jadams']],
  ['row sample (all)', {row: {sample: 0.9999}}, null],
  ['family', {family: 'traits'}, null],
  ['family regex', {family: /tra.*/}, ['alincoln', 'gwashington', 'jadams', 'tjefferson']],
  ['column', {column: 'name'}, ['alincoln', 'gwashington', 'jadams', 'tjefferson']],
  ['column range', {column: {family: 'follows', start: 'j', end: 'k'}}, ['gwashington', 'tjefferson']],
  ['cells per column', {column: {cellLimit: 1}}, null],
  ['value', {value: 'George'}, ['gwashington']],
  ['value range', {value: {start: 'J', end: 'K'}}, ['jadams']],
  ['value strip', [{column: 'name'}, {value: {strip: true}}], ['alincoln', 'gwashington', 'jadams', 'tjefferson']],
  ['time range', {time: {start: new Date(999_000), end: new Date(1_001_000)}}, ['ts']],
  ['cells per row limit', {row: {cellLimit: 1}}, null],
  ['cells per row offset', {row: {cellOffset: 100}}, []],
  ['chain', [{family: 'traits'}, {column: 'name'}, {value: /J.*/}], ['jadams']],
  ['interleave', {interleave: [[{column: 'name'}, {value: 'John'}], [{column: 'name'}, {value: 'George'}]]}, ['gwashington', 'jadams']],
  ['condition', [{condition: {test: {value: 'John'}, pass: {all: true}, fail: {all: false}}}], ['jadams']],
  ['all false', {all: false}, []],
  ['label', [{column: 'name'}, {label: 'lbl'}], ['alincoln', 'gwashington', 'jadams', 'tjefferson']],
];
for (const [name, filter, want] of filterCases) {
  test('filter: ' + name, async () => {
    const rows = await rowsOf(table, {filter});
    if (want !== null) {
      assert.deepEqual(keysOf(rows), want);
    } else {
      assert.ok(keysOf(rows).length > 0);
    }
  });
}

test('filter: labels reach the row', async () => {
  const [rows] = await table.getRows({keys: ['jadams'], filter: [{column: 'name'}, {label: 'lbl'}]});
  assert.deepEqual(rows[0].data.traits.name[0].labels, ['lbl']);
});

test('data: table.mutate of many rows in one batch', async () => {
  const entries = [];
  for (let i = 0; i < 500; i++) {
    entries.push({key: 'bulk#' + String(i).padStart(4, '0'), method: 'insert', data: {plain: {n: String(i)}}});
  }
  await table.mutate(entries);
  const [rows] = await table.getRows({prefix: 'bulk#'});
  assert.equal(rows.length, 500);
});

test('data: a large value (10 MiB) round trip', async () => {
  const big = Buffer.alloc(10 << 20, 'x');
  await table.row('big').save({plain: {v: big}});
  const [rows] = await table.getRows({keys: ['big'], decode: false});
  assert.equal(rows[0].data.plain.v[0].value.length, big.length);
});

test('admin: table.deleteRows by prefix', async () => {
  await table.deleteRows('bulk#');
  const [rows] = await table.getRows({prefix: 'bulk#'});
  assert.equal(rows.length, 0);
});

test('admin: table.truncate', async () => {
  await scratch.insert([{key: 'a', data: {cf: {c: 'v'}}}, {key: 'z', data: {cf: {c: 'v'}}}]);
  await scratch.truncate();
  const [rows] = await scratch.getRows();
  assert.equal(rows.length, 0);
});

test('admin: table.delete', async () => {
  await scratch.delete();
  assert.deepEqual(await scratch.exists(), [false]);
  await table.delete();
  assert.deepEqual(await table.exists(), [false]);
});
