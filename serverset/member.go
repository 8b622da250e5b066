package serverset

import "github.com/gmq/gmq/job"

// memberPrefix names a set's members: Finagle's resolver reads only the
// children whose names start with it (ZooKeeper appends the sequence
// number), as Twitter commons' Group creates them.
const memberPrefix = "member_"

// aliveStatus is the only status written: a broker leaves a set rather
// than staying in it DEAD, as Twitter commons' ServerSet does, so that
// readers that ignore the status still see the truth.
const aliveStatus = "ALIVE"

// member is a member znode's data: the JSON of Twitter commons' JsonCodec
// (ServiceInstance), which Finagle's serverset2 Entry.parseJson reads.
type member struct {
	ServiceEndpoint     hostPort            `json:"serviceEndpoint"`
	AdditionalEndpoints map[string]hostPort `json:"additionalEndpoints"`
	Status              string              `json:"status"`
}

// hostPort is one endpoint in a member's data.
type hostPort struct {
	Host string `json:"host"`
	Port int    `json:"port"`
}

// newMember is the data this broker publishes: its main endpoint, and every
// endpoint by name, the main one included (kestrel lists memcache, thrift
// and text there, whichever is main).
func newMember(opts Options) member {
	m := member{
		ServiceEndpoint:     hostPort{opts.AdvertiseHost, opts.Main.Port},
		AdditionalEndpoints: make(map[string]hostPort, len(opts.Additional)+1),
		Status:              aliveStatus,
	}
	for name, port := range opts.Additional {
		m.AdditionalEndpoints[name] = hostPort{opts.AdvertiseHost, port}
	}
	m.AdditionalEndpoints[opts.Main.Name] = m.ServiceEndpoint
	return m
}

// membership is which sets a broker is to be in.
type membership struct {
	Write, Read bool
}

// has tells whether the set at index i (0 write, 1 read, as
// ServerSet.sets) is wanted.
func (m membership) has(i int) bool {
	if i == 0 {
		return m.Write
	}
	return m.Read
}

// membershipOf maps a status to the sets, as kestrel's statusToWriteStatus
// and statusToReadStatus do: writes only when Up; reads while Up, WriteAvoid
// or ReadOnly; nothing when Quiescent or in a status this package does not
// know (kestrel's Down).
func membershipOf(st job.Status) membership {
	switch st {
	case job.Up:
		return membership{Write: true, Read: true}
	case job.WriteAvoid, job.ReadOnly:
		return membership{Read: true}
	default:
		return membership{}
	}
}
