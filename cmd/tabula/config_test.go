package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/viper"
	"go.yaml.in/yaml/v3"
)

// settingsFor parses a command line the way Execute would and returns the
// command's settings.
func settingsFor(t *testing.T, args ...string) (*cobra.Command, *viper.Viper) {
	t.Helper()
	root := newRootCmd()
	c, rest, err := root.Find(args)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.ParseFlags(rest); err != nil {
		t.Fatal(err)
	}
	v, err := settings(c)
	if err != nil {
		t.Fatal(err)
	}
	return c, v
}

func TestConfigFilesNameOnlyRealFlags(t *testing.T) {
	for cmdName, file := range map[string]string{"master": "master.yaml", "tabletserver": "tabletserver.yaml", "dev": "dev.yaml"} {
		path := filepath.Join("..", "..", "configs", file)
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var keys map[string]any
		if err := yaml.Unmarshal(b, &keys); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		c, v := settingsFor(t, cmdName, "--config", path)
		for k, want := range keys {
			if c.Flags().Lookup(k) == nil {
				t.Errorf("%s: key %q is not a flag of `tabula %s`", file, k, cmdName)
				continue
			}
			if _, isList := want.([]any); isList {
				continue
			}
			if got := v.GetString(k); got != strings.TrimSpace(stringOf(want)) {
				t.Errorf("%s: %s read as %q, file says %v", file, k, got, want)
			}
		}
		// Every size in the file must parse, every duration too.
		for k := range keys {
			if strings.HasSuffix(k, "-size") || strings.HasSuffix(k, "-limit") || k == "split-threshold" {
				if _, err := sizeSetting(v, k); err != nil {
					t.Errorf("%s: %s: %v", file, k, err)
				}
			}
			if strings.HasSuffix(k, "-ttl") && v.GetDuration(k) <= 0 {
				t.Errorf("%s: %s = %q is not a positive duration", file, k, v.GetString(k))
			}
		}
		if got := stringList(v, "etcd"); cmdName != "dev" && !slices.Equal(got, []string{"127.0.0.1:2379"}) {
			t.Errorf("%s: etcd = %v", file, got)
		}
	}
}

func stringOf(x any) string {
	switch x := x.(type) {
	case string:
		return x
	case nil:
		return ""
	}
	b, _ := yaml.Marshal(x)
	return string(b)
}

func TestSettingsPrecedenceFlagEnvFileDefault(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "dev.yaml")
	if err := os.WriteFile(file, []byte("lease-ttl: 5s\nservers: 4\ndata: /from/file\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TABULA_SERVERS", "6")
	t.Setenv("TABULA_DATA", "/from/env")
	_, v := settingsFor(t, "dev", "--config", file, "--data", "/from/flag")
	if got := v.GetString("data"); got != "/from/flag" {
		t.Errorf("data = %q, want the flag's value", got)
	}
	if got := v.GetInt("servers"); got != 6 {
		t.Errorf("servers = %d, want the env's 6", got)
	}
	if got := v.GetDuration("lease-ttl"); got != 5*time.Second {
		t.Errorf("lease-ttl = %v, want the file's 5s", got)
	}
	if got := v.GetString("cluster"); got != "default" {
		t.Errorf("cluster = %q, want the default", got)
	}
	t.Setenv("TABULA_MASTER", "10.0.0.1:1,10.0.0.2:2")
	_, v = settingsFor(t, "servers")
	if got := stringList(v, "master"); !slices.Equal(got, []string{"10.0.0.1:1", "10.0.0.2:2"}) {
		t.Errorf("master from TABULA_MASTER = %v", got)
	}
}

func TestComposeFileIsWellFormed(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "docker-compose.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Services map[string]struct {
			Image     string   `yaml:"image"`
			Build     any      `yaml:"build"`
			Command   []string `yaml:"command"`
			DependsOn []string `yaml:"depends_on"`
			Volumes   []string `yaml:"volumes"`
			Ports     []string `yaml:"ports"`
			Health    struct {
				Test []string `yaml:"test"`
			} `yaml:"healthcheck"`
		} `yaml:"services"`
		Volumes map[string]any `yaml:"volumes"`
	}
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatalf("docker-compose.yml: %v", err)
	}
	count := map[string]int{}
	volumeUsers := map[string]int{}
	for name, s := range doc.Services {
		if s.Image == "" && s.Build == nil {
			t.Errorf("service %s has neither image nor build", name)
		}
		for _, d := range s.DependsOn {
			if _, ok := doc.Services[d]; !ok {
				t.Errorf("service %s depends on unknown service %s", name, d)
			}
		}
		for _, vol := range s.Volumes {
			src, _, _ := strings.Cut(vol, ":")
			if !strings.HasPrefix(src, ".") && !strings.HasPrefix(src, "/") {
				if _, ok := doc.Volumes[src]; !ok {
					t.Errorf("service %s uses undeclared volume %s", name, src)
				}
			}
		}
		for _, port := range s.Ports {
			if !strings.HasPrefix(port, "127.0.0.1:") {
				t.Errorf("service %s publishes %q on every host interface; bind it to 127.0.0.1", name, port)
			}
		}
		if name == "etcd" {
			if !strings.HasPrefix(s.Image, "quay.io/coreos/etcd:v3.6.") || len(s.Command) == 0 || s.Command[0] != "etcd" {
				t.Errorf("etcd service: image %q command %v", s.Image, s.Command)
			}
			continue
		}
		if name == "seaweedfs" {
			// The object store, built from the Dockerfile's weed stage
			// (the version make tools pins).
			if b, ok := s.Build.(map[string]any); !ok || b["target"] != "weed" || len(s.Command) == 0 || s.Command[0] != "mini" {
				t.Errorf("seaweedfs service: build %v command %v; want the Dockerfile's weed target running weed mini", s.Build, s.Command)
			}
			continue
		}
		if len(s.Command) == 0 {
			continue
		}
		// The command line must parse as a real tabula command.
		root := newRootCmd()
		c, rest, err := root.Find(s.Command)
		if err != nil || c == root {
			t.Errorf("service %s: command %v is not a tabula subcommand: %v", name, s.Command, err)
			continue
		}
		if err := c.ParseFlags(rest); err != nil {
			t.Errorf("service %s: command %v: %v", name, s.Command, err)
		}
		count[c.Name()]++
		// Every server process is health-checked through its own --http
		// endpoints, with `tabula health` (the image has no curl).
		if c.Name() != "cli" {
			addr, _ := c.Flags().GetString("http")
			want := []string{"CMD", "/usr/local/bin/tabula", "health", "--http=" + addr}
			if addr == "" || !slices.Equal(s.Health.Test, want) {
				t.Errorf("service %s: --http %q, healthcheck %v; want --http set and healthcheck %v", name, addr, s.Health.Test, want)
			} else if hc, rest, err := newRootCmd().Find(s.Health.Test[2:]); err != nil || hc.Name() != "health" || hc.ParseFlags(rest) != nil {
				t.Errorf("service %s: healthcheck %v is not a tabula health command", name, s.Health.Test)
			}
		}
		if c.Name() == "tabletserver" || c.Name() == "master" {
			if v, _ := c.Flags().GetString("storage"); !strings.HasPrefix(v, "s3://tabula?endpoint=http://seaweedfs:8333") {
				t.Errorf("%s %s keeps its tablets in %q, not on the compose file's object store", c.Name(), name, v)
			}
		}
		if c.Name() == "tabletserver" {
			// Its own volume, as on its own host: nothing shared but the store.
			own := name + "-data:/data"
			if !slices.Contains(s.Volumes, own) || volumeUsers[own] > 0 {
				t.Errorf("tablet server %s does not mount a volume of its own (%s): %v", name, own, s.Volumes)
			}
			volumeUsers[own]++
		}
	}
	if count["master"] != 2 || count["tabletserver"] != 3 {
		t.Errorf("want 2 masters and 3 tablet servers, got %v", count)
	}
}

// The image runs as an unprivileged user.
func TestDockerfileRunsAsNonRoot(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	var user string
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == "USER" {
			user = f[1]
		}
	}
	if user == "" || user == "root" || strings.HasPrefix(user, "0") {
		t.Fatalf("Dockerfile's final USER is %q; want an unprivileged user", user)
	}
}
