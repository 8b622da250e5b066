// The asynq comparison program is a module of its own, so that gmq's own
// go.mod (and everyone who imports gmq's packages) never inherits asynq and
// its dependencies.
module github.com/gmq/gmq/bench/asynq

go 1.26.8

require (
	github.com/gmq/gmq v0.0.0
	github.com/gmq/gmq/client v0.0.0-00010101000000-000000000000
	github.com/hibiken/asynq v0.26.0
	github.com/redis/go-redis/v9 v9.14.1
)

require (
	github.com/apache/thrift v0.17.0 // indirect
	github.com/beanstalkd/go-beanstalk v0.2.0 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/dgryski/go-rendezvous v0.0.0-20200823014737-9f7001d12a5f // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/robfig/cron/v3 v3.0.1 // indirect
	github.com/spf13/cast v1.10.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
	golang.org/x/time v0.14.0 // indirect
	google.golang.org/protobuf v1.36.12 // indirect
)

replace github.com/gmq/gmq => ../..

// gmq's load generator uses the Go client, a module of its own: a
// dependency's replace does not reach here, so this one says where it is.
replace github.com/gmq/gmq/client => ../../client
