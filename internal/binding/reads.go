package binding

import (
	"context"
	"sync"
)

// reads shares the data of a source read from the API server among the
// applies that use one version of it at the same time: the first apply of a
// version GETs it, the applies that start while any of them still holds it
// take the same data, and the last one to release it drops it. So a Secret
// bound by 1,000 bindings is read about once per change while the applies of
// the fan-out overlap (nudge's workers keep several in flight), and no value
// outlives the applies that use it: nothing is cached between them.
type reads struct {
	mu    sync.Mutex
	byKey map[string]*read
}

// read is one GET of a source and the applies holding its data.
type read struct {
	done  chan struct{} // closed when data and err are set
	data  map[string][]byte
	err   error
	users int
}

// get returns the data for key, read by fetch unless an apply holding the
// data of key already has it (or is reading it), and a release function to
// call once the data is no longer needed; release is to be called also when
// err is not nil. The caller must not change the map.
func (rs *reads) get(ctx context.Context, key string, fetch func(context.Context) (map[string][]byte, error)) (map[string][]byte, func(), error) {
	rs.mu.Lock()
	if rs.byKey == nil {
		rs.byKey = map[string]*read{}
	}
	rd, shared := rs.byKey[key]
	if !shared {
		rd = &read{done: make(chan struct{})}
		rs.byKey[key] = rd
	}
	rd.users++
	rs.mu.Unlock()
	release := func() { rs.release(key, rd) }
	if shared {
		select {
		case <-rd.done:
		case <-ctx.Done():
			return nil, release, ctx.Err()
		}
	} else {
		rd.data, rd.err = fetch(ctx)
		if rd.err != nil {
			rs.forget(key, rd) // the next apply tries again
		}
		close(rd.done)
	}
	return rd.data, release, rd.err
}

// release drops one user of rd; the last drops its data.
func (rs *reads) release(key string, rd *read) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	rd.users--
	if rd.users > 0 {
		return
	}
	if rs.byKey[key] == rd {
		delete(rs.byKey, key)
	}
	rd.data = nil
}

// forget stops sharing rd: applies that start later read again.
func (rs *reads) forget(key string, rd *read) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.byKey[key] == rd {
		delete(rs.byKey, key)
	}
}

// held returns how many reads hold data now (for tests).
func (rs *reads) held() int {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return len(rs.byKey)
}
