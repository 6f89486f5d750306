package main

import (
	"github.com/spf13/pflag"

	"minik/apiserver"
)

// authFlags are the apiserver's authentication flags that `minik
// apiserver` and `minik up` share, named as kube-apiserver's.
type authFlags struct {
	signingKey, issuer, tokenFile string
	audiences                     []string
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
}

func (a *authFlags) apply(cfg *apiserver.Config) {
	if a.signingKey != "" {
		cfg.ServiceAccountSigningKeyFile = a.signingKey
	}
	cfg.ServiceAccountIssuer, cfg.APIAudiences, cfg.TokenAuthFile = a.issuer, a.audiences, a.tokenFile
}
