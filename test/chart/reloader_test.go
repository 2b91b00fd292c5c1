package chart

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"

	"nudge.dev/nudge/internal/dialect"
	"nudge.dev/nudge/test/chart/charttest"
)

// reloaderEveryValue is the values file in test/chart/testdata that sets
// every value of Reloader's chart; Reloader's own published defaults are
// charttest.ReloaderValues.
const reloaderEveryValue = "reloader-every-value.yaml"

// TestReloaderValuesDefault installs nudge's chart with Reloader's own
// default values file, as Reloader publishes it: it renders, lints, runs
// nudge's image (not Reloader's) under the restricted settings, keeps
// Reloader's meanings (Argo Rollouts off, its labels and user), and runs
// nudge with the flags of nudge's own defaults but for what the file's
// values mean (docs/reference.md's table): isArgoRollouts: false is
// --ignored-workload-types=rollouts, logLevel: info is --log-level=info,
// and every other value of the file is its flag's default.
func TestReloaderValuesDefault(t *testing.T) {
	g := NewWithT(t)
	file := charttest.ReloaderValues(t)
	r := renderReloader(t, file, nil)
	g.Expect(r.m.Kinds()).To(ConsistOf("ServiceAccount", "Secret", "ClusterRole", "ClusterRoleBinding", "ClusterRole", "ClusterRoleBinding",
		"Role", "RoleBinding", "Service", "Deployment"), "what nudge's defaults render (the Secret: nudge's key, which nudge may not create)")
	c := r.deploy.Spec.Template.Spec.Containers[0]
	g.Expect(c.Image).To(Equal("ghcr.io/nudge-dev/nudge:0.1.0"), "nudge's image, not Reloader's")
	g.Expect(r.deploy.Spec.Replicas).To(HaveValue(BeEquivalentTo(1)))
	g.Expect(r.deploy.Labels).To(HaveKeyWithValue("provider", "stakater"))
	g.Expect(r.deploy.Spec.Template.Labels).To(And(HaveKeyWithValue("group", "com.stakater.platform"), HaveKeyWithValue("version", "v1.4.21")))
	g.Expect(r.deploy.Spec.Template.Spec.SecurityContext.RunAsUser).To(HaveValue(BeEquivalentTo(65534)), "Reloader's user")
	g.Expect(r.deploy.Spec.Template.Spec.HostUsers).To(BeNil(), "hostUsers: null sets nothing")
	g.Expect(c.Resources.Limits.Memory().String()).To(Equal("512Mi"), "nudge's resources: Reloader's are empty")

	g.Expect(c.Args).To(ContainElements("--ignored-workload-types=rollouts", "--log-level=info"))
	own := render(t, nil)
	want := own.opts
	want.IgnoredWorkloadTypes = []string{"rollouts"}
	g.Expect(r.opts).To(Equal(want), "nudge's defaults but isArgoRollouts: false")
	g.Expect(r.opts.Ignores("rollouts")).To(BeTrue(), "isArgoRollouts: false, as in Reloader")
	g.Expect(r.can("watch", "argoproj.io", "rollouts", "shop")).To(BeFalse(), "no permission on Argo Rollouts")
	g.Expect(c.Env).To(Equal(own.deploy.Spec.Template.Spec.Containers[0].Env), "enableMetricsByNamespace: false, no env of Reloader's")

	notes := charttest.Notes(t, release, namespace, []string{file}, nil)
	g.Expect(notes).To(ContainSubstring("kubernetes.host"), "named as without effect")
	g.Expect(notes).To(ContainSubstring("Reloader's image was replaced by nudge's, ghcr.io/nudge-dev/nudge:0.1.0"))
	g.Expect(notes).NotTo(ContainSubstring("reloader.isOpenshift"), "false: not named")
	g.Expect(notes).NotTo(ContainSubstring("does not know"), "every key of Reloader's file known")
}

// TestReloaderValuesMagnum installs nudge's chart with Reloader's default
// values file and the OpenStack Magnum spec's setting,
// reloader.watchGlobally=false (docs/reference.md, "In one namespace
// only"): nudge watches the release's namespace alone, with Roles there and
// no ClusterRole, its flags otherwise those of the file alone.
func TestReloaderValuesMagnum(t *testing.T) {
	g := NewWithT(t)
	file := charttest.ReloaderValues(t)
	magnum := charttest.Values{"reloader": map[string]any{"watchGlobally": false}}
	r := renderReloader(t, file, magnum)
	g.Expect(r.m.Kinds()).To(ConsistOf("ServiceAccount", "Secret", "Role", "RoleBinding", "Role", "RoleBinding", "Service", "Deployment"),
		"namespaced objects only")
	g.Expect(r.deploy.Spec.Template.Spec.Containers[0].Args).To(ContainElements("--namespaces=$(POD_NAMESPACE)",
		"--ignored-workload-types=rollouts", "--log-level=info"))
	want := renderReloader(t, file, nil).opts
	want.Namespaces = []string{namespace}
	g.Expect(r.opts).To(Equal(want), "the file's flags, in the release's namespace")
	g.Expect(r.can("patch", "apps", "daemonsets", namespace)).To(BeTrue(), "Cinder CSI's DaemonSet rolled")
	g.Expect(r.can("list", "", "secrets", namespace)).To(BeTrue(), "its cloud-config Secret read")
	g.Expect(r.can("list", "", "secrets", "shop")).To(BeFalse(), "no other namespace's")

	notes := charttest.Notes(t, release, namespace, []string{file}, magnum)
	g.Expect(notes).To(ContainSubstring("It watches namespace " + namespace))
	g.Expect(notes).NotTo(ContainSubstring("does not know"), "every key of Reloader's file known")
}

// TestReloaderValuesEvery installs nudge's chart with a file that sets every
// value of Reloader's chart, and finds each where it belongs.
func TestReloaderValuesEvery(t *testing.T) {
	g := NewWithT(t)
	r := renderReloader(t, charttest.Testdata(t, reloaderEveryValue), nil, "--api-versions", "autoscaling.k8s.io/v1")
	const name = "platform-reloader"
	spec := r.deploy.Spec.Template.Spec
	c := spec.Containers[0]

	// Image, replicas, leader election.
	g.Expect(c.Image).To(Equal("registry.example/platform/nudge@sha256:" + strings.Repeat("ab", 32)))
	g.Expect(c.ImagePullPolicy).To(Equal(corev1.PullAlways))
	g.Expect(spec.ImagePullSecrets).To(Equal([]corev1.LocalObjectReference{{Name: "registry-pull"}, {Name: "registry-pull-2"}, {Name: "registry-pull-3"}}))
	g.Expect(r.deploy.Name).To(Equal(name))
	g.Expect(r.deploy.Spec.Replicas).To(HaveValue(BeEquivalentTo(2)))
	g.Expect(r.deploy.Spec.RevisionHistoryLimit).To(HaveValue(BeEquivalentTo(5)))
	g.Expect(r.opts.LeaderElect).To(BeTrue())
	g.Expect(r.opts.LeaderElectionID).To(Equal("platform-reloader-lock"))
	g.Expect(r.canNamed("update", "coordination.k8s.io", "leases", namespace, "platform-reloader-lock")).To(BeTrue())

	// Scheduling.
	g.Expect(spec.NodeSelector).To(Equal(map[string]string{"type": "kwok"}))
	g.Expect(spec.Tolerations).To(ConsistOf(HaveField("Key", "platform")))
	g.Expect(spec.Affinity).To(HaveValue(HaveField("NodeAffinity", Not(BeNil()))))
	g.Expect(spec.TopologySpreadConstraints).To(ConsistOf(HaveField("TopologyKey", "kubernetes.io/hostname")))
	g.Expect(spec.PriorityClassName).To(Equal("nudge-test-priority"))
	g.Expect(spec.RuntimeClassName).To(HaveValue(Equal("nudge-test-runtime")))
	g.Expect(spec.SchedulerName).To(Equal("default-scheduler"))
	g.Expect(spec.DNSConfig).To(HaveValue(HaveField("Options", ConsistOf(HaveField("Name", "ndots")))))
	g.Expect(spec.AutomountServiceAccountToken).To(HaveValue(BeTrue()))
	g.Expect(spec.HostUsers).To(HaveValue(BeFalse()))

	// Security contexts, resources, probes, volumes.
	g.Expect(spec.SecurityContext.RunAsUser).To(HaveValue(BeEquivalentTo(65534)))
	g.Expect(spec.SecurityContext.FSGroup).To(HaveValue(BeEquivalentTo(65534)))
	g.Expect(c.SecurityContext.RunAsGroup).To(HaveValue(BeEquivalentTo(65534)))
	g.Expect(c.Resources.Requests.Cpu().Cmp(resource.MustParse("15m"))).To(Equal(0))
	g.Expect(c.Resources.Limits.Memory().String()).To(Equal("384Mi"))
	g.Expect(c.LivenessProbe).To(HaveValue(And(HaveField("PeriodSeconds", BeEquivalentTo(15)), HaveField("FailureThreshold", BeEquivalentTo(6)),
		HaveField("InitialDelaySeconds", BeEquivalentTo(3)), HaveField("HTTPGet.Path", "/healthz"))))
	g.Expect(c.ReadinessProbe).To(HaveValue(And(HaveField("PeriodSeconds", BeEquivalentTo(5)), HaveField("SuccessThreshold", BeEquivalentTo(2)),
		HaveField("TimeoutSeconds", BeEquivalentTo(4)), HaveField("HTTPGet.Path", "/readyz"))))
	g.Expect(spec.Volumes).To(ConsistOf(HaveField("Name", "ca")))
	g.Expect(c.VolumeMounts).To(ConsistOf(And(HaveField("Name", "ca"), HaveField("MountPath", "/etc/ca"))))

	// Environment.
	env := map[string]corev1.EnvVar{}
	for _, e := range c.Env {
		g.Expect(env).NotTo(HaveKey(e.Name), "%s once", e.Name)
		env[e.Name] = e
	}
	g.Expect(env).To(HaveKeyWithValue("ALERT_ON_RELOAD", HaveField("Value", "true")))
	g.Expect(env).To(HaveKeyWithValue("ALERT_WEBHOOK_URL", HaveField("ValueFrom.SecretKeyRef", HaveValue(And(
		HaveField("Name", name), HaveField("Key", "ALERT_WEBHOOK_URL"))))))
	g.Expect(env).To(HaveKeyWithValue("ALERT_ADDITIONAL_INFO", HaveField("ValueFrom.SecretKeyRef", HaveValue(And(
		HaveField("Name", "platform-alerts"), HaveField("Key", "cluster-name"))))))
	g.Expect(env).To(HaveKeyWithValue("NODE_NAME", HaveField("ValueFrom.FieldRef.FieldPath", "spec.nodeName")))
	g.Expect(env).To(HaveKeyWithValue("GOMAXPROCS", HaveField("Value", "2")))
	g.Expect(env).To(HaveKeyWithValue("GOMEMLIMIT", HaveField("Value", "300MiB")))
	g.Expect(env).To(HaveKeyWithValue("METRICS_COUNT_BY_NAMESPACE", HaveField("Value", "enabled")))
	secret := r.m.Get("Secret", name)
	g.Expect(secret).NotTo(BeNil(), "the Secret of env.secret")
	g.Expect(secret.Object["data"]).To(HaveKey("ALERT_WEBHOOK_URL"))

	// Labels and annotations.
	g.Expect(r.deploy.Annotations).To(HaveKeyWithValue("platform.example/owner", "platform-team"))
	g.Expect(r.deploy.Spec.Template.Annotations).To(HaveKeyWithValue("platform.example/scrape", "true"))
	g.Expect(r.deploy.Spec.Template.Labels).To(HaveKeyWithValue("provider", "stakater"))
	g.Expect(r.deploy.Spec.Selector.MatchLabels).To(HaveKeyWithValue("team", "platform"), "matchLabels")
	for _, o := range r.m {
		g.Expect(o.GetLabels()).To(HaveKeyWithValue("team", "platform"), "matchLabels on %s %s", o.GetKind(), o.GetName())
	}

	// Flags: Reloader's values with nudge's own name, and the rest.
	g.Expect(r.opts.AutoReloadAll && r.opts.ReloadOnCreate && r.opts.ReloadOnDelete).To(BeTrue())
	g.Expect(r.opts.ReloadStrategy).To(Equal("annotations"))
	g.Expect(r.opts.NamespacesToIgnore).To(ConsistOf("kube-system", "kube-public"))
	g.Expect(r.opts.NamespaceSelector).To(Equal("team=platform"))
	g.Expect(r.opts.ResourceLabelSelector).To(Equal("reload=yes"))
	g.Expect(r.opts.IgnoresSources("ConfigMap")).To(BeTrue())
	g.Expect(r.opts.IgnoredWorkloadTypes).To(ConsistOf("jobs", "cronjobs"), "Argo Rollouts handled")
	g.Expect(r.opts.LogFormat).To(Equal("json"))
	g.Expect(r.opts.LogLevel).To(Equal("debug"))
	g.Expect(r.opts.WebhookURL).To(Equal("https://hooks.example/nudge"))
	g.Expect(c.Args).To(ContainElements(
		"--auto-annotation=platform.example/auto",
		"--configmap-annotation=platform.example/configmap",
		"--secret-annotation=platform.example/secret",
		"--configmap-auto-annotation=platform.example/configmap-auto",
		"--secret-auto-annotation=platform.example/secret-auto",
		"--auto-search-annotation=platform.example/search",
		"--search-match-annotation=platform.example/match",
		"--pause-deployment-annotation=platform.example/pause-period",
		"--pause-deployment-time-annotation=platform.example/paused-at",
		"--enable-pprof", "--pprof-addr=:6061",
		"--enable-csi-integration",
		"--sync-after-restart",
		"--leader-election-lease-duration=30s", "--leader-election-renew-deadline=20s", "--leader-election-retry-period=5s",
	))
	rl := r.opts.Reloader
	g.Expect(rl.Annotations).To(Equal(dialect.ReloaderNames{
		Auto: "platform.example/auto", ConfigMapReload: "platform.example/configmap", SecretReload: "platform.example/secret",
		ConfigMapAuto: "platform.example/configmap-auto", SecretAuto: "platform.example/secret-auto",
		Search: "platform.example/search", Match: "platform.example/match",
		PausePeriod: "platform.example/pause-period", PausedAt: "platform.example/paused-at",
		// Reloader's names, as no value renames them.
		ConfigMapExclude: dialect.DefaultReloaderNames().ConfigMapExclude, SecretExclude: dialect.DefaultReloaderNames().SecretExclude,
		Ignore:                     dialect.DefaultReloaderNames().Ignore,
		SecretProviderClassAuto:    dialect.DefaultReloaderNames().SecretProviderClassAuto,
		SecretProviderClassReload:  dialect.DefaultReloaderNames().SecretProviderClassReload,
		SecretProviderClassExclude: dialect.DefaultReloaderNames().SecretProviderClassExclude,
	}), "custom_annotations parsed as nudge reads them")
	g.Expect(rl.EnablePprof).To(BeTrue())
	g.Expect(rl.PprofAddr).To(Equal(":6061"))
	g.Expect(rl.EnableCSIIntegration && rl.SyncAfterRestart).To(BeTrue())
	g.Expect([]time.Duration{rl.LeaseDuration, rl.RenewDeadline, rl.RetryPeriod}).To(Equal([]time.Duration{30 * time.Second, 20 * time.Second, 5 * time.Second}))
	g.Expect(r.can("watch", "secrets-store.csi.x-k8s.io", "secretproviderclasspodstatuses", "shop")).To(BeTrue(), "CSI")
	g.Expect(r.can("watch", "", "namespaces", "")).To(BeTrue(), "namespaceSelector")

	// Objects: Service, ServiceAccount, roles, PDB, monitors, policy, VPA.
	svc := &corev1.Service{}
	charttest.Into(t, r.m.Get("Service", name+"-metrics"), svc)
	g.Expect(svc.Spec.Ports).To(ConsistOf(And(HaveField("Port", BeEquivalentTo(9091)), HaveField("TargetPort", intstr.FromString("metrics")))))
	g.Expect(svc.Labels).To(HaveKeyWithValue("platform.example/exposed", "yes"))
	g.Expect(svc.Annotations).To(HaveKeyWithValue("platform.example/release", release), "templated")
	g.Expect(svc.Spec.IPFamilyPolicy).To(HaveValue(BeEquivalentTo("SingleStack")))
	g.Expect(spec.ServiceAccountName).To(Equal("platform-reloader-sa"))
	sa := r.m.Get("ServiceAccount", "platform-reloader-sa")
	g.Expect(sa).NotTo(BeNil())
	g.Expect(sa.GetAnnotations()).To(HaveKey("eks.amazonaws.com/role-arn"))
	g.Expect(sa.GetLabels()).To(HaveKeyWithValue("platform.example/sa", "yes"))
	for _, kind := range []string{"ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"} {
		for _, o := range r.m.OfKind(kind) {
			g.Expect(o.GetLabels()).To(HaveKeyWithValue("platform.example/rbac", "yes"), "%s %s", kind, o.GetName())
		}
	}
	pdb := r.m.Get("PodDisruptionBudget", name)
	g.Expect(pdb).NotTo(BeNil())
	g.Expect(pdb.Object["spec"]).To(And(HaveKeyWithValue("maxUnavailable", BeEquivalentTo(1)), Not(HaveKey("minAvailable"))),
		"maxUnavailable wins, as in Reloader")

	sm := r.m.Get("ServiceMonitor", name)
	g.Expect(sm).NotTo(BeNil())
	g.Expect(sm.GetNamespace()).To(Equal("monitoring"))
	g.Expect(sm.GetLabels()).To(HaveKeyWithValue("release", "prometheus"))
	g.Expect(sm.Object["spec"]).To(And(HaveKeyWithValue("targetLabels", ConsistOf("team")),
		HaveKeyWithValue("namespaceSelector", HaveKeyWithValue("matchNames", ConsistOf(namespace))),
		HaveKeyWithValue("endpoints", ConsistOf(And(HaveKeyWithValue("port", "metrics"), HaveKeyWithValue("interval", "10s"),
			HaveKeyWithValue("scrapeTimeout", "5s"), HaveKeyWithValue("honorLabels", true), HaveKey("tlsConfig"),
			HaveKey("metricRelabelings"), HaveKey("relabelings"), HaveKey("bearerTokenFile"))))))
	pm := r.m.Get("PodMonitor", name)
	g.Expect(pm).NotTo(BeNil(), "podMonitor renders a PodMonitor")
	g.Expect(pm.GetNamespace()).To(Equal("monitoring"))
	g.Expect(pm.Object["spec"]).To(And(HaveKeyWithValue("podTargetLabels", ConsistOf("team")),
		HaveKeyWithValue("selector", HaveKeyWithValue("matchLabels", HaveKeyWithValue("team", "platform"))),
		HaveKeyWithValue("podMetricsEndpoints", ConsistOf(And(HaveKeyWithValue("port", "metrics"), HaveKeyWithValue("interval", "15s"),
			HaveKeyWithValue("scrapeTimeout", "6s"), HaveKeyWithValue("honorLabels", false), HaveKey("bearerTokenSecret"))))))
	np := r.m.Get("NetworkPolicy", name)
	g.Expect(np).NotTo(BeNil())
	g.Expect(np.Object["spec"]).To(And(HaveKeyWithValue("ingress", ConsistOf(HaveKey("from"))), HaveKeyWithValue("egress", ConsistOf(HaveKey("to")))))
	vpa := r.m.Get("VerticalPodAutoscaler", name)
	g.Expect(vpa).NotTo(BeNil(), "with autoscaling.k8s.io/v1 served")
	g.Expect(vpa.Object["spec"]).To(HaveKeyWithValue("targetRef", HaveKeyWithValue("name", name)))

	notes := charttest.Notes(t, release, namespace, []string{charttest.Testdata(t, reloaderEveryValue)}, nil)
	for _, v := range []string{"kubernetes.host", "reloader.isOpenshift", "reloader.readOnlyRootFileSystem", "reloader.legacy.rbac",
		"reloader.verticalPodAutoscaler"} {
		g.Expect(notes).To(ContainSubstring("- "+v+":"), "%s named as without effect", v)
	}
	g.Expect(notes).NotTo(ContainSubstring("replaced by nudge's"), "not Reloader's image")
	g.Expect(notes).NotTo(ContainSubstring("does not know"), "every value of Reloader's chart known")
}

// TestReloaderValuesEveryKey: the file that sets every value of Reloader's
// chart sets every key of Reloader's published default values file (a map
// the published file leaves empty or null counts as set by its key), so a
// value a newer Reloader chart adds is added to it. reloader.namespaces is
// left out, as the file's header says; TestReloaderValuesEach renders it.
func TestReloaderValuesEveryKey(t *testing.T) {
	published, every := readValues(t, charttest.ReloaderValues(t)), readValues(t, charttest.Testdata(t, reloaderEveryValue))
	var missing []string
	var walk func(published, every map[string]any, path string)
	walk = func(published, every map[string]any, path string) {
		for k, v := range published {
			set, ok := every[k]
			switch {
			case path+k == "reloader.namespaces":
			case !ok:
				missing = append(missing, path+k)
			case len(asMap(v)) > 0:
				walk(asMap(v), asMap(set), path+k+".")
			}
		}
	}
	walk(published, every, "")
	slices.Sort(missing)
	NewWithT(t).Expect(missing).To(BeEmpty(), "keys of Reloader's %s values that %s does not set", charttest.ReloaderChart, reloaderEveryValue)
}

// asMap returns v as a map of values, or nil when it is not one.
func asMap(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

// readValues returns the values of the values file at path.
func readValues(t *testing.T, path string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	values := map[string]any{}
	if err := yaml.Unmarshal(b, &values); err != nil {
		t.Fatalf("Decoding %s: %v", path, err)
	}
	return values
}

// TestReloaderValuesEach renders single values of Reloader's chart whose
// meaning in nudge's is not plain.
func TestReloaderValuesEach(t *testing.T) {
	tests := map[string]struct {
		values charttest.Values
		check  func(g Gomega, r rendered)
	}{
		"watchGlobally=false with namespaces, Reloader's scoped mode: Roles in those namespaces only": {
			values: charttest.Values{"reloader": map[string]any{"watchGlobally": false, "namespaces": []string{"team-a", "team-b"},
				"ignoreNamespaces": "kube-system"}},
			check: func(g Gomega, r rendered) {
				g.Expect(r.opts.Namespaces).To(Equal([]string{"team-a", "team-b"}))
				g.Expect(r.opts.NamespacesToIgnore).To(BeEmpty(), "no effect with watchGlobally=false, as in Reloader")
				g.Expect(r.can("patch", "apps", "deployments", "team-a")).To(BeTrue())
				g.Expect(r.can("list", "", "configmaps", "team-b")).To(BeTrue())
				g.Expect(r.can("list", "", "configmaps", namespace)).To(BeFalse(), "not the release namespace's")
				g.Expect(r.m.OfKind("ClusterRole")).To(BeEmpty())
			},
		},
		"Reloader's custom annotation names, nudge's ignore too, become the annotation-name flags": {
			values: charttest.Values{"reloader": map[string]any{"custom_annotations": map[string]any{
				"auto": "a.example/auto", "ignore": "a.example/ignore", "secret": ""}}},
			check: func(g Gomega, r rendered) {
				args := r.deploy.Spec.Template.Spec.Containers[0].Args
				g.Expect(args).To(ContainElements("--auto-annotation=a.example/auto", "--ignore-annotation=a.example/ignore"))
				g.Expect(args).NotTo(ContainElement(HavePrefix("--secret-annotation")), "empty: Reloader's name kept")
			},
		},
		"Reloader's image is replaced by nudge's; a mirror of nudge's is kept": {
			values: charttest.Values{"image": map[string]any{"repository": "ghcr.io/stakater/reloader", "tag": "v1.4.21"},
				"reloader": map[string]any{"deployment": map[string]any{"securityContext": map[string]any{"runAsUser": nil}}}},
			check: func(g Gomega, r rendered) {
				g.Expect(r.deploy.Spec.Template.Spec.Containers[0].Image).To(Equal("ghcr.io/nudge-dev/nudge:0.1.0"))
				g.Expect(r.deploy.Spec.Template.Spec.SecurityContext.RunAsUser).To(BeNil(), "null removes nudge's user (OpenShift)")
			},
		},
		"global.imageRegistry with nudge's image name": {
			values: charttest.Values{"global": map[string]any{"imageRegistry": "mirror.example"}, "image": map[string]any{"tag": "v9"}},
			check: func(g Gomega, r rendered) {
				g.Expect(r.deploy.Spec.Template.Spec.Containers[0].Image).To(Equal("mirror.example/nudge-dev/nudge:v9"))
			},
		},
		"reloader.deployment.replicas counts with enableHA only, as in Reloader": {
			values: charttest.Values{"replicas": 3, "reloader": map[string]any{"deployment": map[string]any{"replicas": 3}}},
			check: func(g Gomega, r rendered) {
				g.Expect(r.deploy.Spec.Replicas).To(HaveValue(BeEquivalentTo(1)))
				g.Expect(r.opts.LeaderElect).To(BeFalse())
			},
		},
		"the top-level namespace places every namespaced object there, as Reloader's chart does": {
			values: charttest.Values{"namespace": "platform", "replicas": 2, "admissionWebhook": map[string]any{"enabled": true},
				"reloader": map[string]any{"netpol": map[string]any{"enabled": true}}},
			check: func(g Gomega, r rendered) {
				namespaced := 0
				for _, o := range r.m {
					if o.GetNamespace() != "" {
						namespaced++
						g.Expect(o.GetNamespace()).To(Equal("platform"), "%s %s", o.GetKind(), o.GetName())
					}
				}
				g.Expect(namespaced).To(BeNumerically(">=", 8), "the Deployment, ServiceAccount, Secrets, Services, Roles, PodDisruptionBudget, NetworkPolicy")
				g.Expect(r.opts.LeaseNamespace()).To(Equal("platform"), "the Lease in nudge's own namespace")
				g.Expect(r.canNamed("update", "coordination.k8s.io", "leases", "platform", r.opts.LeaderElectionID)).To(BeTrue())
				hooks := r.m.OfKind("MutatingWebhookConfiguration")
				g.Expect(hooks).To(HaveLen(1))
				g.Expect(hooks[0].GetName()).To(HaveSuffix("-platform"))
				g.Expect(hooks[0].Object["webhooks"]).To(HaveEach(HaveKeyWithValue("clientConfig",
					HaveKeyWithValue("service", HaveKeyWithValue("namespace", "platform")))), "the API server calls the Service in platform")
			},
		},
		"the top-level namespace with watchGlobally=false: nudge watches that namespace": {
			values: charttest.Values{"namespace": "platform", "reloader": map[string]any{"watchGlobally": false}},
			check: func(g Gomega, r rendered) {
				g.Expect(r.opts.Namespaces).To(Equal([]string{"platform"}))
				g.Expect(r.can("patch", "apps", "deployments", "platform")).To(BeTrue())
				g.Expect(r.can("patch", "apps", "deployments", namespace)).To(BeFalse(), "not the release's")
			},
		},
		"reloader.serviceAccount.automountServiceAccountToken=false: the ServiceAccount mounts no token, nudge's pod its own": {
			values: charttest.Values{"reloader": map[string]any{"serviceAccount": map[string]any{"automountServiceAccountToken": false}}},
			check: func(g Gomega, r rendered) {
				g.Expect(serviceAccount(g, r).AutomountServiceAccountToken).To(HaveValue(BeFalse()))
				g.Expect(r.deploy.Spec.Template.Spec.AutomountServiceAccountToken).To(HaveValue(BeTrue()), "nudge needs its token to reach the API server")
			},
		},
		"reloader.serviceAccount.automountServiceAccountToken=true: on the ServiceAccount, the pod's left alone": {
			values: charttest.Values{"reloader": map[string]any{"serviceAccount": map[string]any{"automountServiceAccountToken": true}}},
			check: func(g Gomega, r rendered) {
				g.Expect(serviceAccount(g, r).AutomountServiceAccountToken).To(HaveValue(BeTrue()))
				g.Expect(r.deploy.Spec.Template.Spec.AutomountServiceAccountToken).To(BeNil())
			},
		},
		"both automountServiceAccountToken=false: the pod mounts none, as in Reloader (a token among reloader.deployment.volumes, say)": {
			values: charttest.Values{"reloader": map[string]any{"serviceAccount": map[string]any{"automountServiceAccountToken": false},
				"deployment": map[string]any{"automountServiceAccountToken": false}}},
			check: func(g Gomega, r rendered) {
				g.Expect(r.deploy.Spec.Template.Spec.AutomountServiceAccountToken).To(HaveValue(BeFalse()))
			},
		},
		"a PodDisruptionBudget with one replica when Reloader's value asks": {
			values: charttest.Values{"reloader": map[string]any{"podDisruptionBudget": map[string]any{"enabled": true, "minAvailable": 1}}},
			check: func(g Gomega, r rendered) {
				g.Expect(r.m.OfKind("PodDisruptionBudget")).To(ConsistOf(HaveField("Object", HaveKeyWithValue("spec", HaveKeyWithValue("minAvailable", BeEquivalentTo(1))))))
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			tc.check(NewWithT(t), renderReloader(t, "", tc.values))
		})
	}
}

// serviceAccount returns the one ServiceAccount r renders.
func serviceAccount(g Gomega, r rendered) *corev1.ServiceAccount {
	accounts := r.m.OfKind("ServiceAccount")
	g.Expect(accounts).To(HaveLen(1))
	sa := &corev1.ServiceAccount{}
	g.Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(accounts[0].Object, sa)).To(Succeed())
	return sa
}

// TestReloaderValuesLint runs helm lint --strict with each of Reloader's
// values files.
func TestReloaderValuesLint(t *testing.T) {
	for name, file := range map[string]func(testing.TB) string{
		"published defaults": charttest.ReloaderValues,
		reloaderEveryValue:   func(t testing.TB) string { return charttest.Testdata(t, reloaderEveryValue) },
	} {
		t.Run(name, func(t *testing.T) {
			args := []string{"lint", "--strict", charttest.Chart(t), "--values", file(t)}
			if out, err := exec.Command(charttest.Helm(t), args...).CombinedOutput(); err != nil {
				t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, out)
			}
		})
	}
}

// renderReloader renders the chart with the values file at path file (none
// when "") and values over it, parses nudge's flags (see parseArgs), and
// checks the invariants.
func renderReloader(t *testing.T, file string, values charttest.Values, args ...string) rendered {
	t.Helper()
	var files []string
	given := map[string]any{}
	if file != "" {
		files = append(files, file)
		given = readValues(t, file)
	}
	mergeValues(given, values)
	m, out, err := charttest.TryRenderFiles(t, release, namespace, files, values, args...)
	if err != nil {
		t.Fatalf("helm template -f %s: %v\n%s", file, err, out)
	}
	r := rendered{m: m}
	deploys := m.OfKind("Deployment")
	if len(deploys) != 1 {
		t.Fatalf("Rendered %d Deployments, want 1", len(deploys))
	}
	r.deploy = &appsv1.Deployment{}
	charttest.Into(t, deploys[0], r.deploy)
	r.opts = parseArgs(t, r.deploy.Spec.Template.Spec.Containers[0].Args, r.deploy.Namespace)
	r.grants = grants(t, m, r.deploy.Namespace)
	checkInvariants(t, r, given)
	return r
}

// mergeValues sets over's values over into, recursing into maps as helm
// merges values files.
func mergeValues(into, over map[string]any) {
	for k, v := range over {
		sub, ok := v.(map[string]any)
		if prev, isMap := into[k].(map[string]any); ok && isMap {
			mergeValues(prev, sub)
			continue
		}
		into[k] = v
	}
}

// TestReloaderValuesUnknown: under reloader and kubernetes any key is
// accepted, as in Reloader's chart (a misspelling too), and named in the
// install notes, at any depth, in order; a map nudge knows as a whole (e.g.
// a securityContext) is not looked into.
func TestReloaderValuesUnknown(t *testing.T) {
	g := NewWithT(t)
	values := charttest.Values{
		"kubernetes": map[string]any{"port": 443},
		"reloader": map[string]any{
			"custom_annotations": map[string]any{"configmaps": "a.example/cm"},
			"deployment": map[string]any{
				"replica":         2,
				"securityContext": map[string]any{"fsGroup": 65534},
				"pod":             map[string]any{"labels": map[string]any{"a": "b"}},
			},
			"newFeature": map[string]any{"enabled": true},
		},
	}
	_, out, err := charttest.TryRender(t, release, namespace, values)
	g.Expect(err).NotTo(HaveOccurred(), "helm template: %s", out)
	notes := charttest.Notes(t, release, namespace, nil, values)
	_, unknown, found := strings.Cut(notes, "check for a misspelling):\n")
	g.Expect(found).To(BeTrue(), "the notes name unknown values:\n%s", notes)
	g.Expect(strings.Fields(unknown)).To(Equal([]string{
		"-", "kubernetes.port",
		"-", "reloader.custom_annotations.configmaps",
		"-", "reloader.deployment.pod.labels",
		"-", "reloader.deployment.replica",
		"-", "reloader.newFeature",
	}))
}
