package plane

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

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
			NewWithT(t).Expect(GoEnv(tt.environ)).To(Equal(tt.want))
		})
	}
}
