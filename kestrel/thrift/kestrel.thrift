// gmq's IDL of Twitter kestrel's Thrift service. The field ids, types,
// defaults and enum values are kestrel's (its src/main/thrift/kestrel.thrift),
// so that a client generated from kestrel's own IDL talks to gmq unchanged.
// gmq's one addition is set_status's field 2, which kestrel's clients never
// send: absent, it reads as "", the fleet's status. Framed transport, binary
// protocol.
//
// The Go package (wire/) is generated from this file: see generate.go.

namespace go wire
namespace py kestrel
namespace java net.lag.kestrel.thrift

// An item a get hands out.
struct Item {
  // Its bytes, as put.
  1: binary data

  // What confirm and abort name it by: 0 for an item removed as it was
  // read (a get with no auto_abort_msec).
  2: i64 id
}

// What peek tells of a queue.
struct QueueInfo {
  // The item at the head of the queue, left there; absent when none is ready.
  1: optional binary head_item

  // Items waiting to be read (gmq: ready now).
  2: i64 items

  // Bytes of the queue's items, in any state.
  3: i64 bytes

  // kestrel's journal on disk; gmq has none and answers 0.
  4: i64 journal_bytes

  // Milliseconds since the head item was put (0: no head item).
  5: i64 age

  // Clients waiting in a get on this queue (gmq: on this broker).
  6: i32 waiters

  // Items read and not yet confirmed or aborted.
  7: i32 open_transactions
}

// The server status, kestrel's values.
enum Status {
  // No status in use (gmq: its advisory writeavoid, which kestrel's enum
  // does not name).
  NOT_CONFIGURED = 0,

  // Clients should stop reading and writing.
  QUIESCENT = 1,

  // Clients should stop writing.
  READ_ONLY = 2,

  // Clients may read and write.
  UP = 3,
}

service Kestrel {
  // Puts items at the tail of queue_name (made if it is new), each expiring
  // expiration_msec from now when it is not 0. Answers how many were put:
  // the first that many, fewer than sent when the queue had no room.
  i32 put(1: string queue_name, 2: list<binary> items, 3: i32 expiration_msec = 0)

  // Reads up to max_items from queue_name, waiting up to timeout_msec for
  // them (0: only what is ready). auto_abort_msec 0 removes them as they
  // are read (their ids are 0); more opens them: each comes back to the
  // queue unless confirmed within that many milliseconds.
  list<Item> get(1: string queue_name, 2: i32 max_items, 3: i32 timeout_msec = 0, 4: i32 auto_abort_msec = 0)

  // Ends the open reads ids of queue_name: their items are gone. Answers
  // how many it ended.
  i32 confirm(1: string queue_name, 2: set<i64> ids)

  // Gives the open reads ids of queue_name back to the head of the queue.
  // Answers how many it gave back.
  i32 abort(1: string queue_name, 2: set<i64> ids)

  // Tells of queue_name and shows its head item, left where it is.
  QueueInfo peek(1: string queue_name)

  // Removes every item of queue_name.
  void flush_queue(1: string queue_name)

  // Removes every item of every queue.
  void flush_all_queues()

  // Removes queue_name and its items.
  void delete_queue(1: string queue_name)

  // The status the server announces.
  Status current_status()

  // Sets the status of every broker sharing the store, or, with broker
  // (gmq's addition: a broker's name, or "this"), that broker's own.
  void set_status(1: Status status, 2: string broker)

  // The server's version.
  string get_version()
}
