package main

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

func TestParseStat(t *testing.T) {
	tests := map[string]struct {
		stat     string
		wantComm string
		wantPPID int
		wantErr  string // "" for none
	}{
		"kube-apiserver, a child of the benchmark": {
			stat:     "4242 (kube-apiserver) S 4200 4242 4200 0 -1 4194560 1000 0 0 0 12 3 0 0 20 0 30 0",
			wantComm: "kube-apiserver", wantPPID: 4200,
		},
		"a command name with spaces and parentheses is read to its last parenthesis": {
			stat:     "7 (a (b) c) R 1 7 7 0 -1",
			wantComm: "a (b) c", wantPPID: 1,
		},
		"no command name":        {stat: "7 etcd S 1", wantErr: "no command name"},
		"nothing after the name": {stat: "7 (etcd) S", wantErr: "no parent"},
		"a parent that is no number": {
			stat: "7 (etcd) S x 7", wantErr: "parent of",
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			comm, ppid, err := parseStat([]byte(tt.stat))
			if tt.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(comm).To(Equal(tt.wantComm))
			g.Expect(ppid).To(Equal(tt.wantPPID))
		})
	}
}

func TestPromValues(t *testing.T) {
	tests := map[string]struct {
		page    string
		want    map[string]float64
		wantErr string // "" for none
	}{
		"etcd's sizes, in exponent notation as etcd writes them": {
			page: "# HELP etcd_mvcc_db_total_size_in_bytes Total size of the underlying database physically allocated in bytes.\n" +
				"# TYPE etcd_mvcc_db_total_size_in_bytes gauge\n" +
				"etcd_mvcc_db_total_size_in_bytes 1.895825408e+09\n" +
				"etcd_server_quota_backend_bytes 8.589934592e+09\n",
			want: map[string]float64{"etcd_mvcc_db_total_size_in_bytes": 1.895825408e+09, "etcd_server_quota_backend_bytes": 8.589934592e+09},
		},
		"labelled samples and blank lines are skipped": {
			page: "etcd_disk_wal_fsync_duration_seconds_bucket{le=\"0.001\"} 12\n\netcd_server_has_leader 1\n",
			want: map[string]float64{"etcd_server_has_leader": 1},
		},
		"a sample with a timestamp keeps its value": {
			page: "up 1 1700000000000\n",
			want: map[string]float64{"up": 1},
		},
		"a sample without a value is an error":  {page: "etcd_server_has_leader\n", wantErr: "no value"},
		"a value that is no number is an error": {page: "etcd_server_has_leader yes\n", wantErr: "invalid syntax"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := promValues(strings.NewReader(tt.page))
			if tt.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tt.want))
		})
	}
}

func TestGoEnv(t *testing.T) {
	tests := map[string]struct {
		environ, want []string
	}{
		"neither set: the Go defaults":          {environ: []string{"HOME=/root", "PATH=/bin"}},
		"both, in the environment's order":      {environ: []string{"GOMEMLIMIT=14GiB", "HOME=/root", "GOGC=50"}, want: []string{"GOMEMLIMIT=14GiB", "GOGC=50"}},
		"a variable that only starts like them": {environ: []string{"GOGCX=1", "GOMEMLIMITS=2"}},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			NewWithT(t).Expect(goEnv(tt.environ)).To(Equal(tt.want))
		})
	}
}
