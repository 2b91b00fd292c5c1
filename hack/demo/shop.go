package main

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"nudge.dev/nudge/internal/workload"
)

// The demo's application: a Deployment web in namespace shop that reads the
// ConfigMap app-config through envFrom and mounts the Secret db-credentials.
const (
	shopNamespace = "shop"
	deployment    = "web"
	configMap     = "app-config"
	secret        = "db-credentials"
	replicas      = 3
	// revisionAnnotation is where the Deployment controller writes the
	// revision of the newest ReplicaSet.
	revisionAnnotation = "deployment.kubernetes.io/revision"
	// settleTimeout bounds the waits for the pods to run and for nudge's
	// baseline.
	settleTimeout = 90 * time.Second
)

// shopObjects returns the ConfigMap, the Secret and the Deployment. The
// Deployment opts in with Stakater Reloader's annotation, which nudge reads
// as it is.
func shopObjects() (*corev1.ConfigMap, *corev1.Secret, *appsv1.Deployment) {
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: shopNamespace, Name: configMap},
		Data:       map[string]string{"LOG_LEVEL": "info", "FEATURE_CHECKOUT_V2": "false"},
	}
	sec := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: shopNamespace, Name: secret},
		Type:       corev1.SecretTypeOpaque,
		StringData: map[string]string{"username": "shop", "password": "s3cr3t"},
	}
	labels := map[string]string{"app": deployment}
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:   shopNamespace,
			Name:        deployment,
			Annotations: map[string]string{"reloader.stakater.com/auto": "true"},
		},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					Containers: []corev1.Container{{
						Name:  "web",
						Image: "registry.example/shop/web:1.0", // kwok runs no container
						EnvFrom: []corev1.EnvFromSource{{
							ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: configMap}},
						}},
						VolumeMounts: []corev1.VolumeMount{{Name: "db", MountPath: "/etc/db", ReadOnly: true}},
					}},
					Volumes: []corev1.Volume{{
						Name:         "db",
						VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: secret}},
					}},
					TerminationGracePeriodSeconds: ptr.To[int64](0),
				},
			},
		},
	}
	return cm, sec, dep
}

// createShop creates the namespace and the objects of shopObjects, then
// waits until the Deployment's pods all run and nudge has recorded its
// baseline, and returns the Deployment as it then is.
func createShop(ctx context.Context, p *printer, create func(context.Context, string) error, cs kubernetes.Interface) (*appsv1.Deployment, error) {
	cm, sec, dep := shopObjects()
	p.step("Creating namespace %s: ConfigMap %s, Secret %s, and Deployment %s (%d replicas, annotated reloader.stakater.com/auto: \"true\")",
		shopNamespace, configMap, secret, deployment, replicas)
	if err := create(ctx, shopNamespace); err != nil {
		return nil, fmt.Errorf("creating namespace %s: %w", shopNamespace, err)
	}
	if _, err := cs.CoreV1().ConfigMaps(shopNamespace).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		return nil, fmt.Errorf("creating ConfigMap %s: %w", configMap, err)
	}
	if _, err := cs.CoreV1().Secrets(shopNamespace).Create(ctx, sec, metav1.CreateOptions{}); err != nil {
		return nil, fmt.Errorf("creating Secret %s: %w", secret, err)
	}
	begin := time.Now()
	if _, err := cs.AppsV1().Deployments(shopNamespace).Create(ctx, dep, metav1.CreateOptions{}); err != nil {
		return nil, fmt.Errorf("creating Deployment %s: %w", deployment, err)
	}
	err := poll(ctx, settleTimeout, fmt.Sprintf("%d running pods of Deployment %s", replicas, deployment), func() error {
		running, err := runningPods(ctx, cs)
		if err == nil && running != replicas {
			err = fmt.Errorf("%d running", running)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	p.detailf("%d/%d pods Running %v after the Deployment was created", replicas, replicas, time.Since(begin).Round(time.Millisecond))
	var applied *appsv1.Deployment
	err = poll(ctx, settleTimeout, "nudge's baseline (annotation "+workload.AppliedAnnotation+")", func() error {
		d, err := cs.AppsV1().Deployments(shopNamespace).Get(ctx, deployment, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if d.Annotations[workload.AppliedAnnotation] == "" {
			return fmt.Errorf("no annotation yet")
		}
		applied = d
		return nil
	})
	if err != nil {
		return nil, err
	}
	p.detailf("nudge recorded its baseline without rolling (ReplicaSet revision %s): %s=",
		applied.Annotations[revisionAnnotation], workload.AppliedAnnotation)
	p.detailf("    %s", applied.Annotations[workload.AppliedAnnotation])
	return applied, nil
}

// runningPods returns how many pods of the Deployment run and are not being
// deleted.
func runningPods(ctx context.Context, cs kubernetes.Interface) (int, error) {
	pods, err := cs.CoreV1().Pods(shopNamespace).List(ctx, metav1.ListOptions{LabelSelector: "app=" + deployment})
	if err != nil {
		return 0, fmt.Errorf("listing pods: %w", err)
	}
	running := 0
	for _, pod := range pods.Items {
		if pod.DeletionTimestamp == nil && pod.Status.Phase == corev1.PodRunning {
			running++
		}
	}
	return running, nil
}

// poll calls check every 100 ms until it returns nil, and fails when ctx
// ends or timeout passes, naming what it waited for and check's last error.
func poll(ctx context.Context, timeout time.Duration, what string, check func() error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	ticker := time.NewTicker(100 * time.Millisecond)
	defer ticker.Stop()
	for {
		last := check()
		if last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w (last check: %v)", what, ctx.Err(), last)
		case <-ticker.C:
		}
	}
}
