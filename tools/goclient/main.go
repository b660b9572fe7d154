// Command goclient is a client-go v0.37.2 program that reads through kube-cache-proxy as in-cluster
// Go clients do: typed clients, the metadata client and shared informers, all asking for protobuf
// first (rest.Config ContentType), and reports what it got as JSON on stdout, for the tests and the
// bench to check: objects listed, watch events, decode errors, and the responses by Content-Type.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
)

// Report is what the program prints.
type Report struct {
	Mode          string         `json:"mode"`
	Listed        int            `json:"listed"`
	Events        int64          `json:"events"`
	DecodeErrors  int64          `json:"decodeErrors"`
	SyncedSeconds float64        `json:"syncedSeconds"`
	ContentTypes  map[string]int `json:"contentTypes"`
	CPUSeconds    float64        `json:"cpuSeconds"`
}

// contentTypes counts the responses by Content-Type (a transport wrapper: what the server answered).
type contentTypes struct {
	mu     sync.Mutex
	counts map[string]int
	next   http.RoundTripper
}

func (c *contentTypes) RoundTrip(req *http.Request) (*http.Response, error) {
	res, err := c.next.RoundTrip(req)
	if err == nil {
		c.mu.Lock()
		c.counts[res.Header.Get("Content-Type")]++
		c.mu.Unlock()
	}
	return res, err
}

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig of the server to read through")
	namespace := flag.String("namespace", "", "namespace to read; empty: all")
	mode := flag.String("mode", "typed", "typed | metadata | informer | node-agent | dynamic-informer")
	resource := flag.String("resource", "", "dynamic-informer: the resource it watches, group/version/plural")
	node := flag.String("node", "", "node-agent: the node whose pods it watches (spec.nodeName)")
	duration := flag.Duration("duration", 5*time.Second, "how long to watch after the initial list")
	contentType := flag.String("content-type", "application/vnd.kubernetes.protobuf", "rest.Config ContentType")
	want := flag.Int64("events", 0, "stop once this many watch events (informer: handler calls after the sync) arrived; 0: watch for -duration")
	flag.Parse()

	config, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		fail(err)
	}
	config.ContentType = *contentType
	config.QPS = 1000
	config.Burst = 1000
	types := &contentTypes{counts: map[string]int{}}
	config.Wrap(func(rt http.RoundTripper) http.RoundTripper { types.next = rt; return types })

	if *mode == "node-agent" {
		runNodeAgent(config, *node)
		return
	}
	if *mode == "dynamic-informer" {
		runDynamicInformer(config, *resource, *namespace)
		return
	}
	report := Report{Mode: *mode}
	started := time.Now()
	ctx := context.Background()
	switch *mode {
	case "typed":
		client := kubernetes.NewForConfigOrDie(config)
		list, err := client.CoreV1().ConfigMaps(*namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			fail(err)
		}
		pods, err := client.CoreV1().Pods(*namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			fail(err)
		}
		report.Listed = len(list.Items) + len(pods.Items)
		report.SyncedSeconds = time.Since(started).Seconds()
		synced()
		w, err := client.CoreV1().ConfigMaps(*namespace).Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion, AllowWatchBookmarks: true})
		if err != nil {
			fail(err)
		}
		count(w, *duration, *want, &report)
	case "metadata":
		client := metadata.NewForConfigOrDie(config)
		gvr := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
		list, err := client.Resource(gvr).Namespace(*namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			fail(err)
		}
		report.Listed = len(list.Items)
		report.SyncedSeconds = time.Since(started).Seconds()
		synced()
		w, err := client.Resource(gvr).Namespace(*namespace).Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion, AllowWatchBookmarks: true})
		if err != nil {
			fail(err)
		}
		count(w, *duration, *want, &report)
	case "informer":
		client := kubernetes.NewForConfigOrDie(config)
		factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(*namespace))
		meta := metadatainformer.NewFilteredSharedInformerFactory(metadata.NewForConfigOrDie(config), 0, *namespace, nil)
		var events atomic.Int64
		handler := cache.ResourceEventHandlerFuncs{
			AddFunc:    func(any) { events.Add(1) },
			UpdateFunc: func(any, any) { events.Add(1) },
			DeleteFunc: func(any) { events.Add(1) },
		}
		configMaps := factory.Core().V1().ConfigMaps().Informer()
		pods := factory.Core().V1().Pods().Informer()
		metaPods := meta.ForResource(schema.GroupVersionResource{Version: "v1", Resource: "pods"}).Informer()
		for _, informer := range []cache.SharedIndexInformer{configMaps, pods, metaPods} {
			if _, err := informer.AddEventHandler(handler); err != nil {
				fail(err)
			}
			if err := informer.SetWatchErrorHandler(func(_ *cache.Reflector, err error) {
				report.DecodeErrors++
				fmt.Fprintln(os.Stderr, "watch error:", err)
			}); err != nil {
				fail(err)
			}
		}
		stop := make(chan struct{})
		factory.Start(stop)
		meta.Start(stop)
		if !cache.WaitForCacheSync(stop, configMaps.HasSynced, pods.HasSynced, metaPods.HasSynced) {
			fail(fmt.Errorf("caches did not sync"))
		}
		report.SyncedSeconds = time.Since(started).Seconds()
		report.Listed = len(configMaps.GetStore().List()) + len(pods.GetStore().List()) + len(metaPods.GetStore().List())
		initial := events.Load()
		synced()
		deadline := time.Now().Add(*duration)
		for time.Now().Before(deadline) && (*want == 0 || events.Load()-initial < *want) {
			time.Sleep(10 * time.Millisecond)
		}
		close(stop)
		report.Events = events.Load() - initial
	default:
		fail(fmt.Errorf("unknown mode %q", *mode))
	}
	types.mu.Lock()
	report.ContentTypes = types.counts
	types.mu.Unlock()
	report.CPUSeconds = cpuSeconds()
	out, _ := json.Marshal(report)
	fmt.Println(string(out))
}

// synced tells the caller (on stderr) that the initial state is in, so that it may write the changes to watch.
func synced() { fmt.Fprintln(os.Stderr, "synced") }

// count reads a watch for `d` or until `want` events: events (bookmarks aside), and the ERROR events a decode failure makes.
func count(w watch.Interface, d time.Duration, want int64, report *Report) {
	timer := time.NewTimer(d)
	defer w.Stop()
	for {
		select {
		case event, ok := <-w.ResultChan():
			if !ok {
				return
			}
			switch event.Type {
			case watch.Error:
				report.DecodeErrors++
				fmt.Fprintf(os.Stderr, "watch error: %v\n", event.Object)
			case watch.Bookmark:
			default:
				report.Events++
				if want > 0 && report.Events >= want {
					return
				}
			}
		case <-timer.C:
			return
		}
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "goclient:", err)
	os.Exit(1)
}
