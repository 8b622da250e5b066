package docs_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gmq/gmq/broker/brokertest"
	"github.com/gmq/gmq/config"
	"github.com/gmq/gmq/internal/redistest"
)

// The docs' examples are tests: every command of every ```sh block of
// README.md and the docs pages runs, page after page in the order a reader
// follows them (README.md, then its "Documentation" list), against ONE
// broker, as a new user runs them against `make run`'s: a page that leaves
// a job, a setting or a schedule behind that breaks a later page's example
// fails here. The default addresses (localhost:8000, 127.0.0.1:11300, …)
// are mapped to that broker's. A curl states the HTTP status it gets as the
// first word of its trailing comment (`curl … # 201 {"id": …}`), and gets
// exactly that; any other command must exit 0 (or say `# exit N`), and the
// comment lines indented under it (`#  INSERTED 16`) are lines its output
// must hold, any number matching any number. Each page's shell variables
// (id=$(gmq push …)) carry on to its own later examples, not to the next
// page's: a page must not lean on another's. Run them all with
//
//	go test -run TestExamples ./docs
//
// and with GMQ_DOCS_LIVE=1, against the broker `make run` started (on the
// default addresses, conf.ini as shipped), as a new user's trial does.
//
// Beside the shell:
//   - A plain ``` block right after a ```sh block (blank lines between, no
//     prose) is a sample of what the block's last command prints: its lines
//     must come in that order in the output. Each line is a label and, after
//     two or more spaces, a value; the labels must match (any number
//     matching any number) and the values only where exactValues says so.
//   - A ```sh block whose first line says "with [web] token set" runs
//     against a second broker (its own Redis) that has a token, with
//     $GMQ_TOKEN set to it, and `[webhook] allow_hosts = 127.0.0.1:8080`.
//   - On the pages of programs, each ```go and ```python block is a whole
//     program, run with `go run` (from the checkout, whose go.mod has its
//     imports) or Debian's /usr/bin/python3; it must exit 0.
//
// The long poll that answered 503 past 5 s (issue 20) broke the README's
// own examples with no test to see it: a 5 s pop here waits its 5 s.

// notPages are the pages README.md lists that have no examples to run.
var notPages = map[string]string{
	"ARCHITECTURE.md":    "it has no examples",
	"PERFORMANCE.md":     "its examples are benchmarks, minutes each, run by hand",
	"performance-log.md": "its examples are benchmarks, minutes each, run by hand",
}

// programs are the pages whose ```go and ```python blocks are whole
// programs, run as they are written.
var programs = map[string]bool{"protocols.md": true}

// exactValues are the labels of a sample whose value must be the one the
// broker prints, each with why; other values differ from run to run.
var exactValues = map[string]string{
	"store format": "a store's format is what an operator compares with the upgrade notes (docs/operations.md)",
	"status":       "the page leaves the fleet up, as the sample shows it",
}

// notRun are commands shown but not run here, each with why; anything else
// a document shows is run.
var notRun = map[string]string{
	"make run":                           "the test starts the broker itself; TestMakeRun runs make run on ports of its own",
	"kill -HUP":                          "the broker under test is in-process; TestReload covers SIGHUP",
	"kill -TSTP":                         "the broker under test is in-process; TestQuietSignal covers SIGTSTP",
	"redis-cli ACL SETUSER gmq":          "the ACL is tested on a Redis of its own (broker/acl_test.go)",
	"redis-cli FUNCTION LIST":            "it reads the operator's Redis; pool's TestLibraryReloaded loads and lists the library",
	"redis-cli HGETALL gmq:meta":         "it reads the operator's Redis; TestStoreFormatWithBrokers reads the format and the brokers' records",
	"cp conf.ini hooks.ini":              "HTTP push delivery's set-up and endpoint (workflows.md): webhook's TestDeliverToPHP runs the docs' endpoint.php under php -S, two brokers delivering to it",
	"sed -i 's/^allow_hosts =$/":         "HTTP push delivery's set-up and endpoint (workflows.md): webhook's TestDeliverToPHP runs the docs' endpoint.php under php -S, two brokers delivering to it",
	"printf '\\n[topic.hooks]":           "HTTP push delivery's set-up and endpoint (workflows.md): webhook's TestDeliverToPHP runs the docs' endpoint.php under php -S, two brokers delivering to it",
	"GMQ_CONF=hooks.ini make run":        "HTTP push delivery's set-up and endpoint (workflows.md): webhook's TestDeliverToPHP runs the docs' endpoint.php under php -S, two brokers delivering to it",
	"php -S 127.0.0.1:8080 endpoint.php": "HTTP push delivery's set-up and endpoint (workflows.md): webhook's TestDeliverToPHP runs the docs' endpoint.php under php -S, two brokers delivering to it",
}

func TestMain(m *testing.M) { brokertest.Main(m) }

// An example is one command (or program) of a document and what it must give.
type example struct {
	where   string // file:line
	command string // a shell command, or a program's source
	lang    string // "sh", or a program's: "go", "python"
	status  int    // a curl's HTTP status (0: not a curl)
	exit    int    // the command's exit code
	output  []string
	sample  []string // a sample of its output, lines in order (exactValues)
	token   bool     // its block is written for a broker with [web] token set
}

// A target is a broker the examples run against, as the shell sees it.
type target struct {
	addrs *strings.Replacer // the docs' default addresses to the broker's
	url   string            // $GMQ_URL
	token string            // $GMQ_TOKEN
}

func newTarget(b *brokertest.Broker, token string) target {
	spaced := func(addr string) string { return strings.Replace(addr, ":", " ", 1) }   // nc's HOST PORT
	quoted := func(addr string) string { return strings.Replace(addr, ":", `", `, 1) } // python's ("HOST", PORT)
	return target{url: b.URL, token: token, addrs: strings.NewReplacer("localhost:8000", b.HTTPAddr, "127.0.0.1:8000", b.HTTPAddr,
		"127.0.0.1:11300", b.BeanstalkAddr, "127.0.0.1:22133", b.KestrelAddr, "127.0.0.1:9503", b.RPCAddr,
		"127.0.0.1 11300", spaced(b.BeanstalkAddr), "127.0.0.1 22133", spaced(b.KestrelAddr), "127.0.0.1 9503", spaced(b.RPCAddr),
		"127.0.0.1:2222", b.TextAddr, "127.0.0.1 2222", spaced(b.TextAddr), "127.0.0.1:2229", b.ThriftAddr,
		`"127.0.0.1", 2229`, `"`+quoted(b.ThriftAddr))}
}

func TestExamples(t *testing.T) {
	gmq := filepath.Join(t.TempDir(), "gmq")
	if out, err := exec.Command("go", "build", "-o", gmq, "..").CombinedOutput(); err != nil {
		t.Fatalf("build gmq: %v\n%s", err, out)
	}
	files := pages(t)
	examples, tokens := make([][]example, len(files)), false
	for i, file := range files {
		examples[i] = parse(t, file)
		for _, ex := range examples[i] {
			tokens = tokens || ex.token
		}
	}
	live := os.Getenv("GMQ_DOCS_LIVE") == "1"
	var one, withToken target
	switch {
	case live: // a new user's trial: `make run`'s broker, as the pages are written
		one = target{addrs: strings.NewReplacer(), url: "http://127.0.0.1:8000"}
	default:
		one = newTarget(brokertest.Fresh(t, func(c *config.Config) { c.RequestTimeout = 2 * time.Second }), "")
		if tokens {
			withToken = tokenBroker(t)
		}
	}
	for i, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			state := filepath.Join(t.TempDir(), "state") // the shell's variables, from one example to the next
			for _, ex := range examples[i] {
				on := one
				if ex.token && live {
					t.Logf("%s: not run: make run's broker has no token", ex.where)
					continue
				}
				if ex.token {
					on = withToken
				}
				run(t, ex, on, gmq, state)
			}
		})
	}
}

// tokenBroker starts a broker with [web] token set and 127.0.0.1:8080 the
// host it may deliver to, on a Redis of its own: the shared broker stays
// the one a new user's `make run` starts, without a token.
func tokenBroker(t *testing.T) target {
	const token = "docs-example-token"
	srv := redistest.Start(t)
	b := brokertest.Start(t, srv, func(c *config.Config) {
		c.RequestTimeout = 2 * time.Second
		c.Token = token
		c.WebhookAllowHosts = []string{"127.0.0.1:8080"}
	})
	return newTarget(b, token)
}

// pages are README.md and the docs pages its "Documentation" section lists,
// in its order, less notPages; a page of docs/ that it does not list fails
// the test, since a reader would not find it.
func pages(t *testing.T) []string {
	t.Helper()
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, list, ok := strings.Cut(string(readme), "\n## Documentation\n")
	if !ok {
		t.Fatal("README.md has no Documentation section")
	}
	list, _, _ = strings.Cut(list, "\n## ")
	out, listed := []string{"../README.md"}, map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^- \[docs/([A-Za-z0-9_-]+\.md)\]`).FindAllStringSubmatch(list, -1) {
		listed[m[1]] = true
		if _, skip := notPages[m[1]]; !skip {
			out = append(out, m[1])
		}
	}
	all, err := filepath.Glob("*.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, page := range all {
		if !listed[page] {
			t.Errorf("docs/%s is not in README.md's Documentation list: a reader cannot find it, and its examples do not run", page)
		}
	}
	return out
}

// run runs one example and checks what it gave.
func run(t *testing.T, ex example, on target, gmq, state string) {
	t.Helper()
	if ex.lang != "sh" {
		runProgram(t, ex, on)
		return
	}
	command := on.addrs.Replace(ex.command)
	command = regexp.MustCompile(`(^|[|;(] *)\./gmq `).ReplaceAllString(command, "${1}gmq ") // the binary the test built, first on PATH
	// curl says its status on stderr after its own messages (-w %{stderr});
	// a document's variables (id=$(gmq push …)) carry on to its next
	// examples through the state file.
	// An example that prints its status itself (-w ' %{http_code}\n', as the
	// first ones do so that a reader sees it) is run as written, and its
	// status read from the end of what it printed.
	wrap := `curl() { command curl -w '%{stderr}\n@status %{http_code}\n' "$@"; }`
	printsStatus := strings.Contains(command, "%{http_code}")
	if printsStatus {
		wrap = ""
	}
	// The state holds every exported variable: GMQ_URL and GMQ_TOKEN are
	// set again after it, for the broker this example runs against.
	script := "[ -f " + state + " ] && . " + state + "\nexport GMQ_URL='" + on.url + "' GMQ_TOKEN='" + on.token + "'\nset -a\n" + wrap + "\n" + command +
		"\n__code=$?\nexport -p > " + state + "\nexit $__code"
	cmd := exec.Command("bash", "-c", script)
	cmd.Dir = ".." // the checkout's root, where the docs say to run them
	cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(gmq)+":"+os.Getenv("PATH"))
	stdout, stderr, code := execute(t, ex, cmd)
	got := fmt.Sprintf("exit %d", code)
	if ex.status != 0 {
		status := regexp.MustCompile(`@status (\d+)`).FindAllStringSubmatch(stderr, -1)
		if printsStatus {
			status = regexp.MustCompile(`(\d{3})\s*$`).FindAllStringSubmatch(stdout, -1)
		}
		got = "no status"
		if len(status) > 0 {
			got = status[len(status)-1][1]
		}
		if ex.status == -1 {
			t.Logf("RECORD %s: %s -> %s %s", ex.where, ex.command, got, clip(stdout))
		} else if got != strconv.Itoa(ex.status) {
			t.Errorf("%s: %s\n  gave %s, the document says %d\n  stdout: %s\n  stderr: %s", ex.where, ex.command, got, ex.status,
				clip(stdout), clip(stderr))
		}
	} else if code != ex.exit {
		t.Errorf("%s: %s\n  gave %s, want exit %d\n  stdout: %s\n  stderr: %s", ex.where, ex.command, got, ex.exit,
			clip(stdout), clip(stderr))
	}
	for _, line := range ex.output {
		if !strings.Contains(anyNumber(stdout), anyNumber(line)) {
			t.Errorf("%s: %s\n  output lacks %q:\n%s", ex.where, ex.command, line, stdout)
		}
	}
	checkSample(t, ex, stdout)
	if testing.Verbose() {
		t.Logf("%s: %s -> %s", ex.where, clip(ex.command), got)
	}
}

// runProgram runs a ```go or ```python block as the whole program it is.
func runProgram(t *testing.T, ex example, on target) {
	t.Helper()
	dir := t.TempDir()
	var cmd *exec.Cmd
	switch ex.lang {
	case "go":
		src := filepath.Join(dir, "main.go")
		write(t, src, on.addrs.Replace(ex.command))
		cmd = exec.Command("go", "run", src)
		cmd.Dir = ".." // the checkout's go.mod has the program's imports (go-beanstalk)
	case "python":
		src := filepath.Join(dir, "example.py")
		write(t, src, on.addrs.Replace(ex.command))
		if strings.Contains(ex.command, `"gen-py"`) { // the thrift client the page says to generate, where it runs
			if out, err := exec.Command("thrift", "-o", dir, "--gen", "py", "../kestrel/thrift/kestrel.thrift").CombinedOutput(); err != nil {
				t.Fatalf("%s: thrift --gen py: %v\n%s", ex.where, err, out)
			}
		}
		cmd = exec.Command("/usr/bin/python3", src)
		cmd.Dir = dir
	default:
		t.Fatalf("%s: no way to run a %s program", ex.where, ex.lang)
	}
	stdout, stderr, code := execute(t, ex, cmd)
	if code != 0 {
		t.Errorf("%s: the %s program exits %d\n  stdout: %s\n  stderr: %s", ex.where, ex.lang, code, clip(stdout), clip(stderr))
	}
	checkSample(t, ex, stdout)
	if testing.Verbose() {
		t.Logf("%s: a %s program -> exit %d: %s", ex.where, ex.lang, code, clip(stdout))
	}
}

func write(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}

// execute runs cmd and returns what it printed and its exit code.
func execute(t *testing.T, ex example, cmd *exec.Cmd) (stdout, stderr string, code int) {
	t.Helper()
	var out, errs strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errs
	err := cmd.Run()
	if exit, ok := err.(*exec.ExitError); ok {
		code = exit.ExitCode()
	} else if err != nil {
		t.Fatalf("%s: %v", ex.where, err)
	}
	return out.String(), errs.String(), code
}

// checkSample checks that the sample shown after an example comes, line by
// line and in order, in what it printed (exactValues says what is compared).
func checkSample(t *testing.T, ex example, stdout string) {
	t.Helper()
	lines := strings.Split(stdout, "\n")
	at := 0
	for _, want := range ex.sample {
		wantLabel, wantValue := labelled(want)
		found := false
		for ; at < len(lines) && !found; at++ {
			label, value := labelled(lines[at])
			if anyNumber(label) != anyNumber(wantLabel) {
				continue
			}
			found = true
			if _, exact := exactValues[label]; exact && value != wantValue {
				t.Errorf("%s: the sample says %q, the output %q", ex.where, strings.TrimSpace(want), strings.TrimSpace(lines[at]))
			}
		}
		if !found {
			t.Errorf("%s: the sample's line %q is not in the output (or not in the sample's order):\n%s", ex.where, strings.TrimSpace(want), stdout)
			return
		}
	}
}

// labelled splits a line of a sample or an output at its first run of two
// or more spaces: a label and its value.
func labelled(line string) (label, value string) {
	line = strings.TrimSpace(line)
	if loc := regexp.MustCompile(`\s{2,}`).FindStringIndex(line); loc != nil {
		return line[:loc[0]], line[loc[1]:]
	}
	return line, ""
}

func anyNumber(s string) string { return regexp.MustCompile(`\d+`).ReplaceAllString(s, "N") }

func clip(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > 300 {
		return s[:300] + "…"
	}
	return s
}
