package admin

import (
	"fmt"
	"io"
)

// schedules lists every cron schedule (docs/topics.md, Cron schedules).
func schedules(c *call) error {
	answer, err := c.do("GET", "/schedules", nil)
	if err != nil {
		return err
	}
	return c.show(answer, func(w io.Writer) {
		fmt.Fprintln(w, "SCHEDULE\tCRON\tTZ\tTOPIC\tNEXT\tLAST\tFIRES\tSKIPS\tREFUSED\tPAUSED")
		m, _ := answer.(map[string]any)
		list, _ := m["schedules"].([]any)
		for _, s := range list {
			s, _ := s.(map[string]any)
			j, _ := s["job"].(map[string]any)
			orDash := func(v any) string {
				if v == nil {
					return "-"
				}
				return text(v)
			}
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", text(s["name"]), text(s["cron"]), text(s["tz"]), text(j["topic"]),
				orDash(s["next"]), orDash(s["last"]), text(s["fires"]), text(s["skips"]), text(s["refused"]), text(s["paused"]))
		}
	})
}

// schedule shows one schedule, or pauses, resumes or fires it (the
// dashboard's buttons): PUT {"paused": …} changes only that, and a fire
// now pushes its job at once, its next fire as it was.
func schedule(c *call) error {
	path := "/schedules/" + c.path(0)
	if len(c.args) == 1 {
		return c.showMap("GET", path, nil)
	}
	switch c.args[1] {
	case "pause", "resume":
		return c.showMap("PUT", path, map[string]any{"paused": c.args[1] == "pause"})
	case "fire":
		return c.showMap("POST", path+"/fire", nil)
	}
	return usageError{fmt.Sprintf("%q: want pause, resume or fire", c.args[1])}
}
