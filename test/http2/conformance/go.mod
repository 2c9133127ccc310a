// Pins h2spec v2.2.1 and its dependencies for install_h2spec.sh. h2spec
// v2.2.1 has no go.mod of its own (the module proxy serves it as
// +incompatible), so `go install ...@version` alone would take the newest of
// each dependency; these are the revisions of its Gopkg.lock.
module uring-http/h2spec

go 1.24

require (
	github.com/fatih/color v1.1.1-0.20161025120501-bf82308e8c85 // indirect
	github.com/inconshreveable/mousetrap v1.0.0 // indirect
	github.com/mattn/go-colorable v0.1.0 // indirect
	github.com/mattn/go-isatty v0.0.4 // indirect
	github.com/spf13/cobra v0.0.0-20170118185516-dc208f4211e7 // indirect
	github.com/spf13/pflag v1.0.3 // indirect
	github.com/summerwind/h2spec v2.2.1+incompatible // indirect
	golang.org/x/net v0.0.0-20161104230106-55a3084c9119 // indirect
	golang.org/x/sys v0.0.0-20190209173611-3b5209105503 // indirect
)

tool github.com/summerwind/h2spec/cmd/h2spec
