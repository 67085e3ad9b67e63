package apiserver

import (
	"encoding/json"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
)

// kubectl sends built-in types it builds itself (kubectl create namespace,
// the DeleteOptions of kubectl delete) as protobuf. The server decodes the
// core v1 types from protobuf and works on their JSON; every answer is
// JSON, which every client accepts.

var (
	protoOnce sync.Once
	protoSer  runtime.Decoder
)

func protobufDecoder() runtime.Decoder {
	protoOnce.Do(func() {
		scheme := runtime.NewScheme()
		if err := corev1.AddToScheme(scheme); err != nil {
			panic(err)
		}
		metav1.AddToGroupVersion(scheme, corev1.SchemeGroupVersion)
		protoSer = protobuf.NewSerializer(scheme, scheme)
	})
	return protoSer
}

// protobufToJSON decodes a protobuf-encoded core v1 object (or
// DeleteOptions) and returns its JSON.
func protobufToJSON(data []byte) ([]byte, error) {
	obj, _, err := protobufDecoder().Decode(data, nil, nil)
	if err != nil {
		return nil, err
	}
	return json.Marshal(obj)
}
