module github.com/splitguard/splitguard/bench/curves

go 1.26

require (
	github.com/cloudflare/circl v1.6.5
	github.com/gtank/ristretto255 v0.1.2
)

require (
	golang.org/x/crypto v0.54.0 // indirect
	golang.org/x/sys v0.47.0 // indirect
)
