package tcpserver

// The outcome of a TCP front end's command, the code label of
// gmq_request_duration_seconds (HTTP's is the status): few values, so an
// alert can watch server errors on every port.
const (
	OK          = "ok"
	ClientError = "client_error" // the request was refused: bad format, unknown command, a limit
	ServerError = "server_error" // the broker could not serve it: Redis down or out of memory, busy
)
