package pool

import (
	"context"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gmq/gmq/job"
)

// Nodes lists the Redis nodes: a single Redis, or every node of a cluster
// (from CLUSTER NODES: replicas too) with each master's slots; the nodes the
// client talks to (a cluster's masters) with their memory and round trip.
func (p *Pool) Nodes(ctx context.Context) []job.NodeInfo {
	clients := p.client.Nodes()
	var out []job.NodeInfo
	if text, err := p.client.Do(ctx, p.client.B().ClusterNodes().Build()).ToString(); err == nil {
		for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
			f := strings.Fields(line)
			if len(f) < 8 {
				continue
			}
			addr, _, _ := strings.Cut(f[1], "@") // host:port@bus-port
			n := job.NodeInfo{Addr: addr, Role: "slave"}
			if strings.Contains(f[2], "master") {
				n.Role, n.Slots = "master", strings.Join(f[8:], ",")
			}
			if strings.Contains(f[2], "fail") && !strings.Contains(f[2], "fail?") {
				n.Err = "failed (" + f[2] + ")"
			}
			out = append(out, n)
		}
	} else {
		for addr := range clients {
			out = append(out, job.NodeInfo{Addr: addr})
		}
	}
	for i := range out {
		c, ok := clients[out[i].Addr]
		if !ok || out[i].Err != "" {
			continue
		}
		start := time.Now()
		text, err := c.Do(ctx, c.B().Info().Section("replication", "memory").Build()).ToString()
		out[i].RTT = time.Since(start)
		if err != nil {
			out[i].Err = err.Error()
			continue
		}
		for _, line := range strings.Split(text, "\n") {
			k, v, _ := strings.Cut(strings.TrimSpace(line), ":")
			switch k {
			case "role":
				out[i].Role = v
			case "used_memory":
				out[i].UsedMemory, _ = strconv.ParseInt(v, 10, 64)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Addr < out[j].Addr })
	return out
}

// slotRanges maps each cluster master's address to its slot ranges; empty
// for a Redis that is not a cluster.
func (p *Pool) slotRanges(ctx context.Context) map[string][]string {
	out := map[string][]string{}
	ranges, err := p.client.Do(ctx, p.client.B().ClusterSlots().Build()).ToArray()
	if err != nil {
		return out // not a cluster
	}
	for _, r := range decodeClusterSlotsReply(ranges).Ranges {
		slots := decodeSlotRangeReply(r)
		master := decodeSlotMasterReply(slots.Master)
		if slots.Values < 3 || master.Values < 2 {
			continue
		}
		addr := master.Host + ":" + strconv.FormatInt(master.Port, 10)
		out[addr] = append(out[addr], strconv.FormatInt(slots.From, 10)+"-"+strconv.FormatInt(slots.To, 10))
	}
	return out
}

// BucketNodes maps each bucket to the address of the node that holds it:
// on a cluster, the master of the bucket's hash slot; else the one node.
func (p *Pool) BucketNodes(ctx context.Context) []string {
	out := make([]string, p.opts.Buckets)
	masters := p.slotRanges(ctx)
	for b := range out {
		slot := keySlot(p.keys.tag(b))
		for addr, ranges := range masters {
			for _, r := range ranges {
				from, to, _ := strings.Cut(r, "-")
				lo, _ := strconv.Atoi(from)
				hi, _ := strconv.Atoi(to)
				if slot >= lo && slot <= hi {
					out[b] = addr
				}
			}
		}
	}
	if len(masters) == 0 {
		for addr := range p.client.Nodes() {
			for b := range out {
				out[b] = addr
			}
		}
	}
	return out
}

// keySlot is Redis Cluster's hash slot of a key: CRC16 (XMODEM) of its hash
// tag (the text between the first { and the next }, when not empty) or of
// the whole key, modulo 16384.
func keySlot(key string) int {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	var crc uint16
	for k := 0; k < len(key); k++ {
		crc ^= uint16(key[k]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return int(crc) % 16384
}
