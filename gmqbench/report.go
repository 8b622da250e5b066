package gmqbench

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
	"time"
)

// Report writes runs against one or more targets as a table, mode by mode
// (with the jobs per call when a run batches; its latencies are per call).
// For each later target, the ratio column is the first target's rate divided
// by that target's: 0.5x means the first does half as many jobs/s.
func Report(w io.Writer, runs [][]Result) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "mode\ttarget\tjobs/s\tp50\tp90\tp99\tmax\tfirst/this\t")
	for i, mode := range Modes {
		for t, run := range runs {
			if i >= len(run) {
				continue
			}
			r := run[i]
			ratio := ""
			if t > 0 && runs[0][i].Rate > 0 {
				ratio = fmt.Sprintf("%.2fx", runs[0][i].Rate/r.Rate)
			}
			label := mode
			if r.Batch > 1 {
				label = fmt.Sprintf("%s (%d/call)", mode, r.Batch)
			}
			fmt.Fprintf(tw, "%s\t%s\t%.0f\t%s\t%s\t%s\t%s\t%s\t\n", label, r.Target, r.Rate,
				ms(r.P50), ms(r.P90), ms(r.P99), ms(r.Max), ratio)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	return reportCPU(w, runs)
}

// reportCPU writes the watched processes' CPU use, if any was measured: the
// cores each kept busy and its CPU microseconds per job, mode by mode.
func reportCPU(w io.Writer, runs [][]Result) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	header := false
	for i, mode := range Modes {
		for _, run := range runs {
			if i >= len(run) {
				continue
			}
			for _, c := range run[i].CPU {
				if !header {
					fmt.Fprintln(tw, "\nmode\ttarget\tprocess\tcores\tcpu µs/job\t")
					header = true
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%.2f\t%.1f\t\n", mode, run[i].Target, c.Process, c.Cores, c.PerJob)
			}
		}
	}
	return tw.Flush()
}

// ReportJSON writes the runs as one JSON document.
func ReportJSON(w io.Writer, runs [][]Result) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(map[string]any{"runs": runs})
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2fms", float64(d.Microseconds())/1000) }
