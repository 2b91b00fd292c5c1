package app

import (
	"errors"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"nudge.dev/nudge/internal/options"
)

// kubeconfig writes a kubeconfig whose current context has namespace ns
// (none when ""), and returns its path.
func kubeconfig(t *testing.T, ns string) string {
	t.Helper()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["c"] = &clientcmdapi.Cluster{Server: "https://127.0.0.1:6443"}
	kc.AuthInfos["u"] = &clientcmdapi.AuthInfo{Token: "t"}
	kc.Contexts["x"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u", Namespace: ns}
	kc.CurrentContext = "x"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestSystemNamespace: where nudge keeps its key when --system-namespace is
// not set (main sets it from $POD_NAMESPACE first).
func TestSystemNamespace(t *testing.T) {
	tests := map[string]struct {
		opts    func(t *testing.T) options.Options
		want    string
		wantErr bool
	}{
		"the flag wins": {
			opts: func(t *testing.T) options.Options {
				return options.Options{SystemNamespace: "ops", Kubeconfig: kubeconfig(t, "team-a")}
			},
			want: "ops",
		},
		"the kubeconfig context's namespace": {
			opts: func(t *testing.T) options.Options { return options.Options{Kubeconfig: kubeconfig(t, "team-a")} },
			want: "team-a",
		},
		"a context without a namespace means default, as for kubectl": {
			opts: func(t *testing.T) options.Options { return options.Options{Kubeconfig: kubeconfig(t, "")} },
			want: "default",
		},
		"a kubeconfig that cannot be read names the flag": {
			opts: func(t *testing.T) options.Options {
				return options.Options{Kubeconfig: filepath.Join(t.TempDir(), "missing")}
			},
			wantErr: true,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			ns, err := systemNamespace(tc.opts(t))
			if tc.wantErr {
				g.Expect(err).To(MatchError(ErrNoSystemNamespace))
				g.Expect(err.Error()).To(ContainSubstring("--system-namespace"))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(ns).To(Equal(tc.want))
		})
	}
}

// TestKeyErrorNamesTheFlag: a key Secret nudge cannot keep, for want of its
// namespace or of permission, names the flag to set; other errors pass as
// they are.
func TestKeyErrorNamesTheFlag(t *testing.T) {
	g := NewWithT(t)
	gr := schema.GroupResource{Resource: "namespaces"}
	for _, err := range []error{apierrors.NewNotFound(gr, "nudge-system"), apierrors.NewForbidden(gr, "nudge-system", errors.New("no"))} {
		got := keyError("nudge-system", err)
		g.Expect(got).To(MatchError(ErrNoSystemNamespace))
		g.Expect(got).To(MatchError(err))
		g.Expect(got.Error()).To(ContainSubstring(`namespace "nudge-system"`))
	}
	other := errors.New("connection refused")
	g.Expect(keyError("nudge-system", other)).To(BeIdenticalTo(other))
}
