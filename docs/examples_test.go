package docs_test

import (
	"bufio"
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
)

// The docs' shell examples are tests: every command of every ```sh block of
// README.md and docs/*.md runs, in order, against a broker of its own per
// file, with the default addresses (localhost:8000, 127.0.0.1:11300, …)
// mapped to that broker's. A curl states the HTTP status it gets as the
// first word of its trailing comment (`curl … # 201 {"id": …}`), and gets
// exactly that; any other command must exit 0 (or say `# exit N`), and the
// comment lines indented under it (`#  INSERTED 16`) are lines its output
// must hold, any number matching any number. Run them all with
//
//	go test -run TestExamples ./docs
//
// The long poll that answered 503 past 5 s (issue 20) broke the README's
// own examples with no test to see it: a 5 s pop here waits its 5 s.

// files are the documents whose examples run; PERFORMANCE.md's are
// benchmarks (minutes each, run by hand) and ARCHITECTURE.md has none.
var files = []string{"../README.md", "api.md", "topics.md", "outcomes.md", "workflows.md", "protocols.md", "operations.md", "cli.md", "clients.md"}

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
	`curl -s -XPUT localhost:8000/api/v1/topics/hooks/config -H`: "a token's run-time change of delivery (workflows.md): the broker under test has no token; webhook's TestDeliverySetAtRunTime makes these with one",
}

func TestMain(m *testing.M) { brokertest.Main(m) }

// An example is one command of a document and what it must give.
type example struct {
	where   string // file:line
	command string
	status  int      // a curl's HTTP status (0: not a curl)
	exit    int      // the command's exit code
	output  []string // lines its output holds
}

func TestExamples(t *testing.T) {
	gmq := filepath.Join(t.TempDir(), "gmq")
	if out, err := exec.Command("go", "build", "-o", gmq, "..").CombinedOutput(); err != nil {
		t.Fatalf("build gmq: %v\n%s", err, out)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			examples := parse(t, file)
			b := brokertest.Fresh(t, func(c *config.Config) { c.RequestTimeout = 2 * time.Second })
			spaced := func(addr string) string { return strings.Replace(addr, ":", " ", 1) } // nc's HOST PORT
			addrs := strings.NewReplacer("localhost:8000", b.HTTPAddr, "127.0.0.1:8000", b.HTTPAddr,
				"127.0.0.1:11300", b.BeanstalkAddr, "127.0.0.1:22133", b.KestrelAddr, "127.0.0.1:9503", b.RPCAddr,
				"127.0.0.1 11300", spaced(b.BeanstalkAddr), "127.0.0.1 22133", spaced(b.KestrelAddr), "127.0.0.1 9503", spaced(b.RPCAddr),
				"127.0.0.1:2222", b.TextAddr, "127.0.0.1 2222", spaced(b.TextAddr), "127.0.0.1:2229", b.ThriftAddr)
			state := filepath.Join(t.TempDir(), "state") // the shell's variables, from one example to the next
			for _, ex := range examples {
				run(t, ex, addrs, b.URL, gmq, state)
			}
		})
	}
}

// run runs one example and checks what it gave.
func run(t *testing.T, ex example, addrs *strings.Replacer, url, gmq, state string) {
	t.Helper()
	command := addrs.Replace(ex.command)
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
	script := "[ -f " + state + " ] && . " + state + "\nset -a\n" + wrap + "\n" + command +
		"\n__code=$?\nexport -p > " + state + "\nexit $__code"
	cmd := exec.Command("bash", "-c", script)
	cmd.Dir = ".." // the checkout's root, where the docs say to run them
	cmd.Env = append(os.Environ(), "GMQ_URL="+url, "GMQ_TOKEN=", "PATH="+filepath.Dir(gmq)+":"+os.Getenv("PATH"))
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if exit, ok := err.(*exec.ExitError); ok {
		code = exit.ExitCode()
	} else if err != nil {
		t.Fatalf("%s: %v", ex.where, err)
	}
	got := fmt.Sprintf("exit %d", code)
	if ex.status != 0 {
		status := regexp.MustCompile(`@status (\d+)`).FindAllStringSubmatch(stderr.String(), -1)
		if printsStatus {
			status = regexp.MustCompile(`(\d{3})\s*$`).FindAllStringSubmatch(stdout.String(), -1)
		}
		got = "no status"
		if len(status) > 0 {
			got = status[len(status)-1][1]
		}
		if ex.status == -1 {
			t.Logf("RECORD %s: %s -> %s %s", ex.where, ex.command, got, clip(stdout.String()))
		} else if got != strconv.Itoa(ex.status) {
			t.Errorf("%s: %s\n  gave %s, the document says %d\n  stdout: %s\n  stderr: %s", ex.where, ex.command, got, ex.status,
				clip(stdout.String()), clip(stderr.String()))
		}
	} else if code != ex.exit {
		t.Errorf("%s: %s\n  gave %s, want exit %d\n  stdout: %s\n  stderr: %s", ex.where, ex.command, got, ex.exit,
			clip(stdout.String()), clip(stderr.String()))
	}
	anyNumber := func(s string) string { return regexp.MustCompile(`\d+`).ReplaceAllString(s, "N") }
	for _, line := range ex.output {
		if !strings.Contains(anyNumber(stdout.String()), anyNumber(line)) {
			t.Errorf("%s: %s\n  output lacks %q:\n%s", ex.where, ex.command, line, stdout.String())
		}
	}
	if testing.Verbose() {
		t.Logf("%s: %s -> %s", ex.where, clip(ex.command), got)
	}
}

// parse reads a document's ```sh blocks into examples. A command runs on
// over lines ending in \ or inside an open quote; comment lines indented
// under a command (`#  …`) are output it must show.
func parse(t *testing.T, file string) []example {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []example
	var cur *example
	inBlock, lineNo := false, 0
	status := regexp.MustCompile(`#\s*(\d{3})\b`)
	exit := regexp.MustCompile(`#\s*exit (\d+)`)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		lineNo++
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "```sh"):
			inBlock = true
			continue
		case strings.HasPrefix(line, "```"):
			inBlock, cur = false, nil
			continue
		case !inBlock:
			continue
		}
		if cur != nil && open(cur.command) {
			cur.command += "\n" + line
			continue
		}
		trimmed := strings.TrimSpace(line)
		if trimmed == "" {
			cur = nil
			continue
		}
		if strings.HasPrefix(trimmed, "#") {
			if cur != nil && strings.HasPrefix(line, "#  ") {
				cur.output = append(cur.output, strings.TrimSpace(strings.TrimPrefix(line, "#")))
			} else {
				cur = nil
			}
			continue
		}
		out = append(out, example{where: fmt.Sprintf("%s:%d", filepath.Base(file), lineNo), command: line})
		cur = &out[len(out)-1]
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	var kept []example
	for _, ex := range out {
		if why, skip := skipped(ex.command); skip {
			t.Logf("%s: not run: %s (%s)", ex.where, ex.command, why)
			continue
		}
		comment := trailingComment(ex.command)
		if strings.HasPrefix(strings.TrimSpace(ex.command), "curl ") || strings.Contains(ex.command, "| curl ") {
			m := status.FindStringSubmatch(comment)
			if m == nil && os.Getenv("GMQ_DOCS_RECORD") == "1" {
				ex.status = -1 // run it and log what it gave, to write into the document
				kept = append(kept, ex)
				continue
			}
			if m == nil {
				t.Errorf("%s: %s\n  a curl example must state its status: end it with `# 200` (or the status it gets)", ex.where, ex.command)
				continue
			}
			ex.status, _ = strconv.Atoi(m[1])
		} else if m := exit.FindStringSubmatch(comment); m != nil {
			ex.exit, _ = strconv.Atoi(m[1])
		}
		kept = append(kept, ex)
	}
	if len(kept) == 0 && len(out) > 0 {
		t.Fatalf("%s: no example kept", file)
	}
	return kept
}

// skipped says whether a command is one of notRun, and why.
func skipped(command string) (string, bool) {
	for prefix, why := range notRun {
		if strings.HasPrefix(strings.TrimSpace(command), prefix) {
			return why, true
		}
	}
	return "", false
}

// open says whether a command goes on to the next line: a trailing \ or an
// unclosed single quote.
func open(command string) bool {
	if strings.HasSuffix(command, "\\") {
		return true
	}
	code := strings.TrimSuffix(command, trailingComment(command))
	return strings.Count(code, "'")%2 == 1
}

// trailingComment is what follows the last " #" outside quotes, on the
// command's last line.
func trailingComment(command string) string {
	inQuote, start := false, -1
	for i, r := range command {
		switch {
		case r == '\'':
			inQuote = !inQuote
		case r == '\n':
			start = -1
		case r == '#' && !inQuote && start < 0 && (i == 0 || command[i-1] == ' ' || command[i-1] == '\n'):
			start = i
		}
	}
	if start < 0 {
		return ""
	}
	return command[start:]
}

func clip(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > 300 {
		return s[:300] + "…"
	}
	return s
}
