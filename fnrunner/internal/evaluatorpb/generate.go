// Package evaluatorpb holds the gRPC client and server code of Porch's
// function-evaluator protocol (evaluator.FunctionEvaluator), generated
// from evaluator.proto by protoc with protoc-gen-go v1.36.12 and
// protoc-gen-go-grpc v1.5.1 on PATH:
//
//	go install google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12
//	go install google.golang.org/grpc/cmd/protoc-gen-go-grpc@v1.5.1
//	go generate ./internal/evaluatorpb
package evaluatorpb

//go:generate protoc --go_out=. --go_opt=paths=source_relative --go-grpc_out=. --go-grpc_opt=paths=source_relative evaluator.proto
