package admin

import "fmt"

// batch shows one batch (docs/workflows.md, Batches): its state and
// counts; or closes it, or cancels it and the jobs of it not yet ended.
func batch(c *call) error {
	path := "/batches/" + c.path(0)
	if len(c.args) == 1 {
		return c.showMap("GET", path, nil)
	}
	switch c.args[1] {
	case "close":
		return c.showMap("POST", path+"/close", nil)
	case "cancel":
		return c.showMap("DELETE", path, nil)
	}
	return usageError{fmt.Sprintf("%q: want close or cancel", c.args[1])}
}
