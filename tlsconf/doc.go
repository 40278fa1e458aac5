// Package tlsconf builds the TLS configurations Tabula's processes use on
// their gRPC ports and towards etcd, from PEM files named in a Files, and
// runs the local certificate authority of the dev cluster and the tests.
//
// Every component (master, tablet server, etcd) holds a certificate signed
// by the cluster's CA and presents it both as a server and as a client, so
// components authenticate each other with mutual TLS. End-user clients may
// present a certificate too, or authenticate with a token instead: servers
// verify a client certificate when one is given but do not demand one.
//
//	f := tlsconf.Files{CA: "ca.pem", Cert: "master.pem", Key: "master-key.pem"}
//	srvCfg, err := tlsconf.ServerConfig(f)
//	srv := grpc.NewServer(grpc.Creds(credentials.NewTLS(srvCfg)))
//	...
//	p, _ := peer.FromContext(ctx)
//	info, _ := p.AuthInfo.(credentials.TLSInfo)
//	name, ok := tlsconf.PeerName(info.State) // "tabula-admin", true
//
// A certificate and its key are read again when their files change, so a
// certificate is rotated by overwriting its files, without a restart. The
// CA bundle is read once: trusting a new CA needs a restart.
//
// GenerateDev writes a CA and one certificate per identity into a
// directory, for the dev cluster and for tests:
//
//	pki, err := tlsconf.GenerateDev("data/tls")
//	srvCfg, err := tlsconf.ServerConfig(pki.Master)
//	cliCfg, err := tlsconf.ClientConfig(pki.Admin)
package tlsconf
