package main

import (
	"time"

	"github.com/spf13/pflag"

	"minik/apiserver"
)

// authFlags are the apiserver's authentication, admission and protection
// flags that `minik apiserver` and `minik up` share, named as
// kube-apiserver's.
type authFlags struct {
	signingKey, issuer, tokenFile        string
	audiences                            []string
	maxInflight, maxMutating, maxWatches int
	requestTimeout                       time.Duration
	disableAdmission                     []string
}

func addAuthFlags(f *pflag.FlagSet) *authFlags {
	a := &authFlags{}
	a.register(f)
	return a
}

func (a *authFlags) register(f *pflag.FlagSet) {
	f.StringVar(&a.signingKey, "service-account-signing-key-file", "", "private key (PEM) that signs service-account tokens (minik up: DATA/pki/sa.key)")
	f.StringVar(&a.issuer, "service-account-issuer", "https://kubernetes.default.svc.cluster.local", "the iss claim of service-account tokens")
	f.StringSliceVar(&a.audiences, "api-audiences", nil, "audiences a token must name to be accepted (default: the issuer)")
	f.StringVar(&a.tokenFile, "token-auth-file", "", "static bearer tokens, CSV: token,user,uid,\"group1,group2\"")
	f.IntVar(&a.maxInflight, "max-requests-inflight", 400, "read-only requests served at once (watches not counted); more wait for a slot up to a quarter of --request-timeout (as many as this at most), then get 429")
	f.IntVar(&a.maxMutating, "max-mutating-requests-inflight", 200, "mutating requests served at once; more wait for a slot up to a quarter of --request-timeout (as many as this at most), then get 429")
	f.IntVar(&a.maxWatches, "max-watches-per-user", 1000, "watches one user may hold open at once; more get 429")
	f.DurationVar(&a.requestTimeout, "request-timeout", time.Minute, "deadline of each request that is not long-running, and of reading any request body")
	f.StringSliceVar(&a.disableAdmission, "disable-admission-plugins", nil, "admission plugins to leave out (minik can leave out: ServiceAccount)")
}

func (a *authFlags) apply(cfg *apiserver.Config) {
	if a.signingKey != "" {
		cfg.ServiceAccountSigningKeyFile = a.signingKey
	}
	cfg.ServiceAccountIssuer, cfg.APIAudiences, cfg.TokenAuthFile = a.issuer, a.audiences, a.tokenFile
	cfg.MaxRequestsInflight, cfg.MaxMutatingRequestsInflight, cfg.RequestTimeout = a.maxInflight, a.maxMutating, a.requestTimeout
	cfg.DisableAdmissionPlugins = a.disableAdmission
	cfg.MaxWatchesPerUser = a.maxWatches
}
