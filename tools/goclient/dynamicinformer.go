package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

// runDynamicInformer is an informer client of one resource, as controllers of custom resources
// run one (client-go's dynamic shared informer, its defaults: WatchList where the server supports
// it, re-watch from the last RV, relist after a 410). It prints "synced" on stderr once the
// informer has synced, then "ADDED|MODIFIED|DELETED namespace/name rv" for each handler call,
// and on stdin's end prints its store, one "namespace/name rv" line each, then "watch-errors N", and exits.
// `resource` is group/version/plural ("" group: "/v1/configmaps").
func runDynamicInformer(config *rest.Config, resource, namespace string) {
	parts := strings.Split(resource, "/")
	if len(parts) != 3 {
		fail(fmt.Errorf("-resource %q: want group/version/plural", resource))
	}
	gvr := schema.GroupVersionResource{Group: parts[0], Version: parts[1], Resource: parts[2]}
	client := dynamic.NewForConfigOrDie(config)
	factory := dynamicinformer.NewFilteredDynamicSharedInformerFactory(client, 0, namespace, nil)
	informer := factory.ForResource(gvr).Informer()
	errs := countWatchErrors(informer)
	report := func(kind string, obj any) {
		if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = tombstone.Obj
		}
		if u, ok := obj.(*unstructured.Unstructured); ok && informer.HasSynced() {
			fmt.Fprintf(os.Stderr, "%s %s/%s %s\n", kind, u.GetNamespace(), u.GetName(), u.GetResourceVersion())
		}
	}
	if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { report("ADDED", obj) },
		UpdateFunc: func(_, obj any) { report("MODIFIED", obj) },
		DeleteFunc: func(obj any) { report("DELETED", obj) },
	}); err != nil {
		fail(err)
	}
	stop := make(chan struct{})
	factory.Start(stop)
	if !cache.WaitForCacheSync(stop, informer.HasSynced) {
		fail(fmt.Errorf("the %s informer did not sync", resource))
	}
	synced()
	_, _ = io.Copy(io.Discard, os.Stdin)
	close(stop)
	var lines []string
	for _, obj := range informer.GetStore().List() {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			continue
		}
		lines = append(lines, fmt.Sprintf("%s/%s %s", u.GetNamespace(), u.GetName(), u.GetResourceVersion()))
	}
	sort.Strings(lines)
	out := bufio.NewWriter(os.Stdout)
	for _, line := range lines {
		fmt.Fprintln(out, line)
	}
	fmt.Fprintf(out, "watch-errors %d\n", errs.count())
	_ = out.Flush()
}
