package gmqbench

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Process is a process whose CPU time a run measures: a broker, Redis, a
// beanstalkd. Where throughput goes with more cores is read from these: the
// CPU each process spends per job says how many cores a rate needs.
type Process struct {
	Name string
	PID  int
}

// Self is the load generator's own process, measured beside the others so
// the share the benchmark itself takes of a small machine shows.
func Self() Process { return Process{Name: "bench", PID: os.Getpid()} }

// CPU is one process's use over one mode's run.
type CPU struct {
	Process string  `json:"process"`
	Seconds float64 `json:"cpu_seconds"` // user + system time
	Cores   float64 `json:"cores"`       // Seconds over the run's wall time
	PerJob  float64 `json:"us_per_job"`  // microseconds of CPU per job
}

// clockTicks is Linux's USER_HZ, the unit of /proc/PID/stat's times: 100 on
// every architecture Go runs Linux on.
const clockTicks = 100

// cpuSeconds reads a process's user and system CPU time, all its threads'
// (fields 14 and 15 of /proc/PID/stat), in seconds.
func cpuSeconds(pid int) (float64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("cpu of process %d: %w", pid, err)
	}
	// The command name (field 2) is in parentheses and may hold spaces.
	_, rest, ok := strings.Cut(string(data), ") ")
	fields := strings.Fields(rest)
	if !ok || len(fields) < 13 {
		return 0, fmt.Errorf("cpu of process %d: unreadable /proc stat %q", pid, data)
	}
	var ticks int64
	for _, f := range fields[11:13] { // utime, stime: fields 14 and 15, counted from 1 before the name
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("cpu of process %d: %w", pid, err)
		}
		ticks += n
	}
	return float64(ticks) / clockTicks, nil
}

// cpuMeter takes the processes' CPU times at a mode's start and end.
type cpuMeter struct {
	procs  []Process
	before []float64
}

func startCPU(procs []Process) (*cpuMeter, error) {
	m := &cpuMeter{procs: procs, before: make([]float64, len(procs))}
	for i, p := range procs {
		s, err := cpuSeconds(p.PID)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p.Name, err)
		}
		m.before[i] = s
	}
	return m, nil
}

// stop reads the times again and says each process's use over wall seconds
// for jobs jobs.
func (m *cpuMeter) stop(wall float64, jobs int) ([]CPU, error) {
	out := make([]CPU, len(m.procs))
	for i, p := range m.procs {
		s, err := cpuSeconds(p.PID)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p.Name, err)
		}
		used := s - m.before[i]
		out[i] = CPU{Process: p.Name, Seconds: used, Cores: used / wall, PerJob: 1e6 * used / float64(max(jobs, 1))}
	}
	return out, nil
}
