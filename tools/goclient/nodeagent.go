package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"sync"
	"syscall"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

// monotonicNs is CLOCK_MONOTONIC in nanoseconds: the clock the bench's other processes read, so
// that an arrival here and a write's response there are comparable.
func monotonicNs() int64 {
	var ts syscall.Timespec
	syscall.Syscall(syscall.SYS_CLOCK_GETTIME, 1, uintptr(unsafe.Pointer(&ts)), 0)
	return ts.Nano()
}

type record struct {
	kind string
	name string
	rv   string
	at   int64
}

// runNodeAgent is a node agent's pod informer (the fleet bench): the pods bound to `node`, from a
// shared informer as a kubelet-style agent starts it (the config's content type, WatchList as
// client-go's defaults send it). It prints "synced" on stderr once the informer has synced, records
// every handler call from then on (its kind, the pod's namespace/name, its resourceVersion, its
// arrival on CLOCK_MONOTONIC), and on stdin's end prints them, one "kind name rv ns" line each,
// then "watch-errors N" and exits.
func runNodeAgent(config *rest.Config, node string) {
	client := kubernetes.NewForConfigOrDie(config)
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.FieldSelector = "spec.nodeName=" + node
	}))
	var mu sync.Mutex
	var records []record
	recording := false
	add := func(kind string, obj any) {
		at := monotonicNs()
		if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = tombstone.Obj
			kind = "DELETED-UNKNOWN"
		}
		pod, ok := obj.(*corev1.Pod)
		if !ok {
			return
		}
		mu.Lock()
		if recording {
			records = append(records, record{kind, pod.Namespace + "/" + pod.Name, pod.ResourceVersion, at})
		}
		mu.Unlock()
	}
	informer := factory.Core().V1().Pods().Informer()
	if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { add("ADDED", obj) },
		UpdateFunc: func(_, obj any) { add("MODIFIED", obj) },
		DeleteFunc: func(obj any) { add("DELETED", obj) },
	}); err != nil {
		fail(err)
	}
	errs := countWatchErrors(informer)
	stop := make(chan struct{})
	factory.Start(stop)
	if !cache.WaitForCacheSync(stop, informer.HasSynced) {
		fail(fmt.Errorf("the pod informer did not sync"))
	}
	mu.Lock()
	recording = true
	mu.Unlock()
	synced()
	_, _ = io.Copy(io.Discard, os.Stdin)
	close(stop)
	mu.Lock()
	defer mu.Unlock()
	out := bufio.NewWriter(os.Stdout)
	for _, r := range records {
		fmt.Fprintf(out, "%s %s %s %d\n", r.kind, r.name, r.rv, r.at)
	}
	fmt.Fprintf(out, "watch-errors %d\n", errs.count())
	_ = out.Flush()
}

// watchErrors counts an informer's watch errors, each also printed on stderr, for the final report.
type watchErrors struct {
	mu sync.Mutex
	n  int
}

func countWatchErrors(informer cache.SharedIndexInformer) *watchErrors {
	w := &watchErrors{}
	if err := informer.SetWatchErrorHandler(func(_ *cache.Reflector, err error) {
		w.mu.Lock()
		w.n++
		w.mu.Unlock()
		fmt.Fprintln(os.Stderr, "watch error:", err)
	}); err != nil {
		fail(err)
	}
	return w
}

func (w *watchErrors) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.n
}
