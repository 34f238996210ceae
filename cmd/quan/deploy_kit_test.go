package main

// Tests of the deployment kit (compose.yaml, Dockerfile, deploy/systemd,
// deploy/prometheus/prometheus.yml): they parse, name what they should, and
// every quan command, flag and QUAN_* variable they use is one quan accepts.

import (
	"bytes"
	"errors"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/quanhq/quan/cmd/quan/internal/cli"
)

// repoRoot is the repository's root, from cmd/quan.
var repoRoot = filepath.Join("..", "..")

// quanAccepts checks that quan parses args (a command line after the
// binary's name, as "serve --migrate=false") with env set: it turns each
// QUAN_X variable into --x=VALUE (QUAN_X_FILE into --x=placeholder, the
// file being a secret the test cannot read), appends -h, and expects help,
// not a usage error. So an unknown subcommand, flag or variable, or a value
// a flag refuses, fails.
func quanAccepts(t *testing.T, where string, args []string, env map[string]string) {
	t.Helper()
	line := slices.Clone(args)
	for _, k := range slices.Sorted(maps.Keys(env)) {
		name, ok := strings.CutPrefix(k, "QUAN_")
		if !ok {
			t.Errorf("%s: %s is not a QUAN_* variable", where, k)
			continue
		}
		v := env[k]
		if n, ok := strings.CutSuffix(name, "_FILE"); ok {
			name, v = n, "placeholder"
		}
		line = append(line, "--"+strings.ToLower(strings.ReplaceAll(name, "_", "-"))+"="+v)
	}
	line = append(line, "-h")
	var out bytes.Buffer
	m := &Main{Stdout: &out, Stderr: &out, Getenv: func(string) string { return "" }}
	if err := m.Run(t.Context(), line); !errors.Is(err, cli.ErrHelp) {
		t.Errorf("%s: quan %s: %v\n%s", where, strings.Join(line, " "), err, out.String())
	}
}

// composeFile is the part of a compose file the tests read.
type composeFile struct {
	Name     string `yaml:"name"`
	Services map[string]struct {
		Image       string            `yaml:"image"`
		Build       any               `yaml:"build"`
		Command     []string          `yaml:"command"`
		Environment map[string]string `yaml:"environment"`
		Secrets     []string          `yaml:"secrets"`
		Volumes     []string          `yaml:"volumes"`
		DependsOn   map[string]struct {
			Condition string `yaml:"condition"`
		} `yaml:"depends_on"`
	} `yaml:"services"`
	Secrets map[string]struct {
		File string `yaml:"file"`
	} `yaml:"secrets"`
	Volumes map[string]any `yaml:"volumes"`
}

func TestComposeFile(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot, "compose.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var c composeFile // yaml.v3 resolves the anchors and merge keys (<<)
	if err := yaml.Unmarshal(b, &c); err != nil {
		t.Fatalf("compose.yaml: %v", err)
	}
	images := map[string]string{
		"mariadb": "mariadb:", "redis": "redis:", "nats": "nats:", "prometheus": "prom/prometheus:", "grafana": "grafana/grafana:",
		"migrate": "quan:", "serve": "quan:", "worker-1": "quan:", "worker-2": "quan:",
	}
	for name, prefix := range images {
		s, ok := c.Services[name]
		if !ok {
			t.Errorf("compose.yaml: no service %s", name)
			continue
		}
		if !strings.HasPrefix(s.Image, prefix) {
			t.Errorf("compose.yaml: %s's image %q, want %s…", name, s.Image, prefix)
		}
	}
	if !slices.Contains(c.Services["nats"].Command, "--jetstream") {
		t.Errorf("compose.yaml: nats without --jetstream: %q", c.Services["nats"].Command)
	}

	var commands []string
	for _, name := range slices.Sorted(maps.Keys(c.Services)) {
		s := c.Services[name]
		where := "compose.yaml " + name
		for _, sec := range s.Secrets {
			f, ok := c.Secrets[sec]
			if !ok {
				t.Errorf("%s: secret %s not declared", where, sec)
			} else if !strings.HasPrefix(f.File, "./deploy/secrets/") {
				t.Errorf("%s: secret %s in %s, not under deploy/secrets", where, sec, f.File)
			}
		}
		for k, v := range s.Environment {
			if p, ok := strings.CutPrefix(v, "/run/secrets/"); ok && strings.HasSuffix(k, "_FILE") && !slices.Contains(s.Secrets, p) {
				t.Errorf("%s: %s=%s, but the service has no secret %s", where, k, v, p)
			}
		}
		for _, v := range s.Volumes {
			if src, ok := strings.CutPrefix(v, "./"); ok {
				if _, err := os.Stat(filepath.Join(repoRoot, strings.SplitN(src, ":", 2)[0])); err != nil {
					t.Errorf("%s: volume %s: %v", where, v, err)
				}
			}
		}
		if !strings.HasPrefix(s.Image, "quan:") {
			continue
		}
		if s.Build == nil {
			t.Errorf("%s: no build", where)
		}
		if len(s.Command) == 0 {
			t.Errorf("%s: no command (the image's default is serve; say it)", where)
			continue
		}
		commands = append(commands, strings.Join(s.Command[:min(2, len(s.Command))], " "))
		quanAccepts(t, where, s.Command, s.Environment)
		if s.Command[0] == "serve" || s.Command[0] == "worker" {
			if s.Environment["QUAN_MIGRATE"] != "false" {
				t.Errorf("%s: migrates on start; the migrate service does", where)
			}
			if s.DependsOn["migrate"].Condition != "service_completed_successfully" {
				t.Errorf("%s: does not wait for migrate", where)
			}
			if _, port, _ := strings.Cut(s.Environment["QUAN_ADMIN_ADDR"], ":"); port != "9090" {
				t.Errorf("%s: QUAN_ADMIN_ADDR %q, Prometheus scrapes :9090", where, s.Environment["QUAN_ADMIN_ADDR"])
			}
		}
	}
	slices.Sort(commands)
	if want := []string{"migrate up", "serve", "worker", "worker"}; !slices.Equal(commands, want) {
		t.Errorf("compose.yaml runs quan %q, want %q", commands, want)
	}

	// deploy/secrets/init.sh makes every secret file compose mounts.
	initSh, err := os.ReadFile(filepath.Join(repoRoot, "deploy", "secrets", "init.sh"))
	if err != nil {
		t.Fatal(err)
	}
	for name, s := range c.Secrets {
		if !regexp.MustCompile(`(?m)^write ` + regexp.QuoteMeta(filepath.Base(s.File)) + ` `).Match(initSh) {
			t.Errorf("deploy/secrets/init.sh does not write %s (secret %s)", s.File, name)
		}
	}
}

func TestPrometheusConfig(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(deployDir, "prometheus", "prometheus.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		RuleFiles     []string `yaml:"rule_files"`
		ScrapeConfigs []struct {
			JobName       string `yaml:"job_name"`
			StaticConfigs []struct {
				Targets []string `yaml:"targets"`
			} `yaml:"static_configs"`
		} `yaml:"scrape_configs"`
	}
	if err := yaml.Unmarshal(b, &cfg); err != nil {
		t.Fatalf("prometheus.yml: %v", err)
	}
	if !slices.Equal(cfg.RuleFiles, []string{"alerts.yml"}) {
		t.Errorf("rule_files %q", cfg.RuleFiles)
	}
	var targets []string
	for _, sc := range cfg.ScrapeConfigs {
		if !strings.HasPrefix(sc.JobName, "quan") {
			t.Errorf("job %s: QuanTargetDown and the dashboard select jobs quan*", sc.JobName)
		}
		for _, s := range sc.StaticConfigs {
			targets = append(targets, s.Targets...)
		}
	}
	slices.Sort(targets)
	if want := []string{"serve:9090", "worker-1:9090", "worker-2:9090"}; !slices.Equal(targets, want) {
		t.Errorf("scrapes %q, want compose.yaml's %q", targets, want)
	}
}

func TestDockerfile(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	text := strings.ReplaceAll(string(b), "\\\n", " ")
	// The final stage's instructions.
	final := text[strings.LastIndex(text, "\nFROM "):]
	for _, want := range []string{`ENTRYPOINT ["quan"]`, `CMD ["serve"]`, "EXPOSE 8080 9090", "VOLUME /data"} {
		if !strings.Contains(final, "\n"+want+"\n") {
			t.Errorf("Dockerfile's final stage lacks %s", want)
		}
	}
	if !strings.Contains(text, "RUN deploy/build.sh ") {
		t.Error("Dockerfile does not build with deploy/build.sh")
	}
	user := regexp.MustCompile(`(?m)^USER (\S+)`).FindStringSubmatch(final)
	if user == nil || user[1] == "root" || strings.HasPrefix(user[1], "0") {
		t.Errorf("Dockerfile's final stage runs as %q, want a non-root USER", user)
	}
	env := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^ENV (.*)$`).FindAllStringSubmatch(final, -1) {
		for _, kv := range strings.Fields(m[1]) {
			k, v, _ := strings.Cut(kv, "=")
			env[k] = v
		}
	}
	if env["QUAN_DATA"] != "/data" {
		t.Errorf("Dockerfile: QUAN_DATA %q, want the volume /data", env["QUAN_DATA"])
	}
	quanAccepts(t, "Dockerfile", []string{"serve"}, env)
	quanAccepts(t, "Dockerfile", []string{"worker"}, withoutKeys(env, "QUAN_ADDR"))
}

func withoutKeys(m map[string]string, keys ...string) map[string]string {
	m = maps.Clone(m)
	for _, k := range keys {
		delete(m, k)
	}
	return m
}

// systemdUnit is a unit file's directives, in order, by key.
type systemdUnit map[string][]string

func readUnit(t *testing.T, path string) systemdUnit {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	u := systemdUnit{}
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, ";") || strings.HasPrefix(line, "[") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			t.Fatalf("%s: %q", path, line)
		}
		u[k] = append(u[k], v)
	}
	return u
}

// envFile reads KEY=VALUE lines, as systemd's EnvironmentFile does for the
// simple cases quan.env uses.
func envFile(t *testing.T, path string) map[string]string {
	t.Helper()
	u := readUnit(t, path)
	env := map[string]string{}
	for k, v := range u {
		env[k] = v[len(v)-1]
	}
	return env
}

func TestSystemdUnits(t *testing.T) {
	dir := filepath.Join(deployDir, "systemd")
	// Specifiers: %i the instance (a worker's admin port), %S the state
	// directory's root, %d the credentials directory.
	specifiers := strings.NewReplacer("%i", "9091", "%S", "/var/lib", "%d", "/run/credentials/quan.service")
	for _, tc := range []struct {
		file, command string
		migrates      bool
	}{
		{"quan.service", "serve", true},
		{"quan-worker@.service", "worker", false},
	} {
		u := readUnit(t, filepath.Join(dir, tc.file))
		env := map[string]string{}
		for _, f := range u["EnvironmentFile"] {
			if f != "/etc/quan/quan.env" {
				t.Errorf("%s: EnvironmentFile %s, want /etc/quan/quan.env (deploy/systemd/quan.env)", tc.file, f)
			}
			maps.Copy(env, envFile(t, filepath.Join(dir, "quan.env")))
		}
		for _, e := range u["Environment"] {
			k, v, _ := strings.Cut(specifiers.Replace(e), "=")
			env[k] = v
		}
		if env["QUAN_DATA"] != "/var/lib/quan" || !slices.Equal(u["StateDirectory"], []string{"quan"}) {
			t.Errorf("%s: QUAN_DATA %q and StateDirectory %q, want the state directory quan", tc.file, env["QUAN_DATA"], u["StateDirectory"])
		}
		execLines := func(key string) [][]string {
			var cmds [][]string
			for _, line := range u[key] {
				args := strings.Fields(specifiers.Replace(strings.TrimLeft(line, "-@:+!")))
				if len(args) == 0 || args[0] != "/usr/local/bin/quan" {
					t.Errorf("%s: %s=%s, want /usr/local/bin/quan", tc.file, key, line)
					continue
				}
				cmds = append(cmds, args[1:])
			}
			return cmds
		}
		starts := execLines("ExecStart")
		if len(starts) != 1 || starts[0][0] != tc.command || !slices.Contains(starts[0], "--migrate=false") {
			t.Errorf("%s: ExecStart %q, want one quan %s --migrate=false", tc.file, u["ExecStart"], tc.command)
		}
		for _, args := range starts {
			quanAccepts(t, tc.file+" ExecStart", args, env)
		}
		pre := execLines("ExecStartPre")
		if tc.migrates != slices.ContainsFunc(pre, func(a []string) bool { return slices.Equal(a, []string{"migrate", "up"}) }) {
			t.Errorf("%s: ExecStartPre %q", tc.file, u["ExecStartPre"])
		}
		for _, args := range pre {
			// The variables meant for serve pass through migrate
			// unread; it needs the store.
			quanAccepts(t, tc.file+" ExecStartPre", args, map[string]string{"QUAN_STORE_FILE": env["QUAN_STORE_FILE"]})
		}
		for key, want := range map[string]string{"Restart": "on-failure", "NoNewPrivileges": "yes", "ProtectSystem": "strict", "DynamicUser": "yes"} {
			if !slices.Contains(u[key], want) {
				t.Errorf("%s: %s=%q, want %s", tc.file, key, u[key], want)
			}
		}
		stop, err := time.ParseDuration(strings.Join(u["TimeoutStopSec"], ""))
		drain, err2 := time.ParseDuration(env["QUAN_SHUTDOWN_TIMEOUT"])
		if err != nil || err2 != nil || stop <= drain {
			t.Errorf("%s: TimeoutStopSec %q must outlast the drain (--shutdown-timeout %q)", tc.file, u["TimeoutStopSec"], env["QUAN_SHUTDOWN_TIMEOUT"])
		}
	}
}

// TestSystemdAnalyzeVerify runs `systemd-analyze verify` on the units where
// it is installed, with quan replaced by /bin/true (the test does not
// install quan): any warning fails.
func TestSystemdAnalyzeVerify(t *testing.T) {
	path, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze not installed; TestSystemdUnits checks the units without it")
	}
	tmp := t.TempDir()
	units := map[string]string{"quan.service": "quan.service", "quan-worker@.service": "quan-worker@9091.service"}
	var args []string
	for src, dst := range units {
		b, err := os.ReadFile(filepath.Join(deployDir, "systemd", src))
		if err != nil {
			t.Fatal(err)
		}
		b = bytes.ReplaceAll(b, []byte("/usr/local/bin/quan"), []byte("/bin/true"))
		if err := os.WriteFile(filepath.Join(tmp, dst), b, 0o644); err != nil {
			t.Fatal(err)
		}
		args = append(args, filepath.Join(tmp, dst))
	}
	cmd := exec.CommandContext(t.Context(), path, append([]string{"verify"}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
}
