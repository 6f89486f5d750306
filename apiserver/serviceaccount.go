package apiserver

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/csv"
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/uuid"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"minik/apiserver/storage"
	"minik/internal/pki"
)

// Service-account tokens, as kube-apiserver issues and checks them: JWTs
// signed with the apiserver's key, naming the account (and, for bound
// tokens, the pod and node) in a "kubernetes.io" claim. A token stops
// working when it expires or when the account or the pod it is bound to
// is gone (or was replaced by one of the same name).
//
//	POST serviceaccounts/NAME/token (TokenRequest) ─▶ sign {iss, sub, aud, exp, kubernetes.io{...}}
//	Authorization: Bearer JWT ─▶ signature, issuer, audience, expiry ─▶ account and pod still the same?
//	   ─▶ user system:serviceaccount:NS:NAME in system:serviceaccounts, system:serviceaccounts:NS

// tokenIssuer signs and verifies service-account tokens.
type tokenIssuer struct {
	issuer    string
	audiences []string // what a token must be for to authenticate here
	key       crypto.Signer
	method    jwt.SigningMethod
	keyID     string
}

// The kubernetes.io claim of a service-account token.
type kubernetesClaim struct {
	Namespace      string           `json:"namespace"`
	ServiceAccount claimRef         `json:"serviceaccount"`
	Pod            *claimRef        `json:"pod,omitempty"`
	Node           *claimRef        `json:"node,omitempty"`
	Secret         *claimRef        `json:"secret,omitempty"`
	WarnAfter      *jwt.NumericDate `json:"warnafter,omitempty"`
}

type claimRef struct {
	Name string `json:"name"`
	UID  string `json:"uid"`
}

type tokenClaims struct {
	jwt.RegisteredClaims
	Kubernetes kubernetesClaim `json:"kubernetes.io"`
}

func newTokenIssuer(keyFile, issuer string, audiences []string) (*tokenIssuer, error) {
	data, err := os.ReadFile(keyFile)
	if err != nil {
		return nil, fmt.Errorf("service account signing key: %w", err)
	}
	key, err := pki.ParseKeyPEM(data)
	if err != nil {
		return nil, fmt.Errorf("service account signing key %s: %w", keyFile, err)
	}
	t := &tokenIssuer{issuer: issuer, audiences: audiences, key: key}
	switch k := key.(type) {
	case *ecdsa.PrivateKey:
		t.method = jwt.SigningMethodES256
	case *rsa.PrivateKey:
		t.method = jwt.SigningMethodRS256
	default:
		return nil, fmt.Errorf("service account signing key: unsupported key type %T", k)
	}
	der, err := x509.MarshalPKIXPublicKey(key.Public())
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(der) // the key id, as kube-apiserver computes it
	t.keyID = base64.RawURLEncoding.EncodeToString(sum[:])
	if len(t.audiences) == 0 {
		t.audiences = []string{issuer}
	}
	return t, nil
}

// sign returns a token for the claims.
func (t *tokenIssuer) sign(c *tokenClaims) (string, error) {
	tok := jwt.NewWithClaims(t.method, c)
	tok.Header["kid"] = t.keyID
	return tok.SignedString(t.key)
}

// verify checks a token's signature, issuer, expiry and audience (one of
// audiences, or of the apiserver's own when nil) and returns its claims
// and the audiences it is valid for.
func (t *tokenIssuer) verify(raw string, now time.Time, audiences []string) (*tokenClaims, []string, error) {
	c := &tokenClaims{}
	_, err := jwt.ParseWithClaims(raw, c, func(*jwt.Token) (any, error) { return t.key.Public(), nil },
		jwt.WithValidMethods([]string{t.method.Alg()}), jwt.WithIssuer(t.issuer),
		jwt.WithTimeFunc(func() time.Time { return now }), jwt.WithExpirationRequired())
	if err != nil {
		return nil, nil, err
	}
	if audiences == nil {
		audiences = t.audiences
	}
	var valid []string
	for _, a := range audiences {
		if slices.Contains(c.Audience, a) {
			valid = append(valid, a)
		}
	}
	if len(valid) == 0 {
		return nil, nil, errors.New("token audience is not accepted here")
	}
	return c, valid, nil
}

// jwks is the public key set of /openid/v1/jwks.
func (t *tokenIssuer) jwks() map[string]any {
	key := map[string]any{"use": "sig", "kid": t.keyID, "alg": t.method.Alg()}
	switch pub := t.key.Public().(type) {
	case *ecdsa.PublicKey:
		size := (pub.Curve.Params().BitSize + 7) / 8
		key["kty"], key["crv"] = "EC", pub.Curve.Params().Name
		key["x"] = base64.RawURLEncoding.EncodeToString(pub.X.FillBytes(make([]byte, size)))
		key["y"] = base64.RawURLEncoding.EncodeToString(pub.Y.FillBytes(make([]byte, size)))
	case *rsa.PublicKey:
		key["kty"] = "RSA"
		key["n"] = base64.RawURLEncoding.EncodeToString(pub.N.Bytes())
		key["e"] = base64.RawURLEncoding.EncodeToString(big.NewInt(int64(pub.E)).Bytes())
	}
	return map[string]any{"keys": []any{key}}
}

// serveOpenIDConfiguration and serveJWKS are the issuer discovery
// documents that let others verify service-account tokens.
func (s *Server) serveOpenIDConfiguration(w http.ResponseWriter, r *http.Request) {
	if s.tokens == nil {
		writeError(w, r, notFoundPath(r))
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"issuer": s.tokens.issuer, "jwks_uri": strings.TrimSuffix(s.tokens.issuer, "/") + "/openid/v1/jwks",
		"response_types_supported": []string{"id_token"}, "subject_types_supported": []string{"public"},
		"id_token_signing_alg_values_supported": []string{s.tokens.method.Alg()},
	})
}

func (s *Server) serveJWKS(w http.ResponseWriter, r *http.Request) {
	if s.tokens == nil {
		writeError(w, r, notFoundPath(r))
		return
	}
	w.Header().Set("Content-Type", "application/jwk-set+json")
	writeJSON(w, http.StatusOK, s.tokens.jwks())
}

// The limits of a TokenRequest's expirationSeconds, as kube-apiserver's.
const (
	minTokenSeconds     = 600
	defaultTokenSeconds = 3600
	maxTokenSeconds     = 48 * 3600 // --service-account-max-token-expiration
)

// createToken answers POST serviceaccounts/NAME/token (kubectl create token).
func (h *resourceHandler) createToken(w http.ResponseWriter, r *http.Request, ri *requestInfo) {
	s := h.srv
	if s.tokens == nil {
		writeError(w, r, statusError(http.StatusNotFound, metav1.StatusReasonNotFound, "service account tokens are not enabled: the apiserver has no --service-account-signing-key-file"))
		return
	}
	req := &authenticationv1.TokenRequest{}
	if err := decodeBody(r, req); err != nil {
		writeError(w, r, err)
		return
	}
	ctx := r.Context()
	obj, err := getCachedOrFresh(ctx, h.store, ri.namespace, ri.name, nil)
	if err != nil {
		writeError(w, r, err)
		return
	}
	sa := obj.(*corev1.ServiceAccount)
	secs := int64(defaultTokenSeconds)
	if req.Spec.ExpirationSeconds != nil {
		secs = *req.Spec.ExpirationSeconds
	}
	if secs < minTokenSeconds {
		writeError(w, r, tokenInvalid(ri.name, "spec.expirationSeconds", secs, "may not specify a duration less than 10 minutes"))
		return
	}
	if secs > maxTokenSeconds {
		secs = maxTokenSeconds
	}
	now := time.Now()
	claims := &tokenClaims{RegisteredClaims: jwt.RegisteredClaims{Issuer: s.tokens.issuer,
		Subject: serviceAccountUser(sa.Namespace, sa.Name), Audience: req.Spec.Audiences,
		ExpiresAt: jwt.NewNumericDate(now.Add(time.Duration(secs) * time.Second)), IssuedAt: jwt.NewNumericDate(now),
		NotBefore: jwt.NewNumericDate(now), ID: uuid.NewString()},
		Kubernetes: kubernetesClaim{Namespace: sa.Namespace, ServiceAccount: claimRef{Name: sa.Name, UID: string(sa.UID)}}}
	if len(claims.Audience) == 0 {
		claims.Audience = jwt.ClaimStrings{s.tokens.issuer}
	}
	if ref := req.Spec.BoundObjectRef; ref != nil {
		if err := s.bindToken(ctx, claims, ri, ref); err != nil {
			writeError(w, r, err)
			return
		}
	} else if _, isNode := nodeIdentity(UserFrom(ctx)); isNode {
		writeError(w, r, apierrors.NewForbidden(h.res.GroupResource(), ri.name, errors.New("node requested token not bound to a pod")))
		return
	}
	token, err := s.tokens.sign(claims)
	if err != nil {
		writeError(w, r, err)
		return
	}
	req.TypeMeta = metav1.TypeMeta{APIVersion: "authentication.k8s.io/v1", Kind: "TokenRequest"}
	req.Name, req.Namespace, req.CreationTimestamp = sa.Name, sa.Namespace, metav1.NewTime(now)
	req.Spec.ExpirationSeconds = &secs
	req.Spec.Audiences = claims.Audience
	req.Status = authenticationv1.TokenRequestStatus{Token: token, ExpirationTimestamp: metav1.NewTime(claims.ExpiresAt.Time)}
	writeObject(w, r, http.StatusCreated, req)
}

// bindToken ties a token to a pod (and its node) or a secret: it must
// exist with the given uid, and a kubelet may bind only to its own pods.
func (s *Server) bindToken(ctx context.Context, c *tokenClaims, ri *requestInfo, ref *authenticationv1.BoundObjectReference) error {
	node, isNode := nodeIdentity(UserFrom(ctx))
	gr := corev1.Resource("serviceaccounts")
	switch ref.Kind {
	case "Pod":
		obj, err := getCachedOrFresh(ctx, s.pods, ri.namespace, ref.Name, func(o runtime.Object) bool {
			return ref.UID == "" || o.(*corev1.Pod).UID == ref.UID
		})
		if err != nil {
			return err
		}
		pod := obj.(*corev1.Pod)
		if ref.UID != "" && ref.UID != pod.UID {
			return apierrors.NewConflict(gr, ri.name, fmt.Errorf("the UID in the bound object reference (%s) does not match the UID in record (%s). The object might have been deleted and then recreated", ref.UID, pod.UID))
		}
		if isNode && (ref.UID == "" || pod.Spec.NodeName != node) {
			return apierrors.NewForbidden(gr, ri.name, errors.New("node requested token bound to a pod scheduled on a different node"))
		}
		if pod.Spec.ServiceAccountName != "" && pod.Spec.ServiceAccountName != ri.name {
			return apierrors.NewBadRequest(fmt.Sprintf("cannot bind token for serviceaccount %q to pod running with different serviceaccount name.", ri.name))
		}
		c.Kubernetes.Pod = &claimRef{Name: pod.Name, UID: string(pod.UID)}
		if pod.Spec.NodeName != "" {
			if nobj, err := getCachedOrFresh(ctx, s.nodes, "", pod.Spec.NodeName, nil); err == nil {
				c.Kubernetes.Node = &claimRef{Name: pod.Spec.NodeName, UID: string(nobj.(*corev1.Node).UID)}
			}
		}
	case "Secret":
		if isNode {
			return apierrors.NewForbidden(gr, ri.name, errors.New("node requested token not bound to a pod"))
		}
		obj, err := s.handlers["/v1/secrets"].store.Get(ctx, ri.namespace, ref.Name)
		if err != nil {
			return err
		}
		secret := obj.(*corev1.Secret)
		if ref.UID != "" && ref.UID != secret.UID {
			return apierrors.NewConflict(gr, ri.name, fmt.Errorf("the UID in the bound object reference (%s) does not match the UID in record (%s). The object might have been deleted and then recreated", ref.UID, secret.UID))
		}
		c.Kubernetes.Secret = &claimRef{Name: secret.Name, UID: string(secret.UID)}
	default:
		return apierrors.NewBadRequest(fmt.Sprintf("cannot bind token to object of type %s", ref.Kind))
	}
	return nil
}

// getCachedOrFresh reads an object from the watch cache, and from etcd
// when the cache has none or one that fails ok (nil: any): a token
// request binds to objects its caller saw through this cache, so the
// cache almost always answers, and three etcd reads per pod start would
// queue behind a busy cluster's writes. A miss is never trusted: the
// object may be newer than the cache.
func getCachedOrFresh(ctx context.Context, store *storage.Store, namespace, name string, ok func(runtime.Object) bool) (runtime.Object, error) {
	obj, err := store.ServeGet(ctx, namespace, name, "0")
	if err == nil && (ok == nil || ok(obj)) {
		return obj, nil
	}
	return store.Get(ctx, namespace, name)
}

func tokenInvalid(name, fieldPath string, value any, detail string) error {
	return statusError(http.StatusUnprocessableEntity, metav1.StatusReasonInvalid,
		fmt.Sprintf("TokenRequest.authentication.k8s.io %q is invalid: %s: Invalid value: %v: %s", name, fieldPath, value, detail))
}

// authenticateToken turns a bearer token into a user: a static token from
// --token-auth-file, or a service-account token whose account (and bound
// pod) still exist as they were when it was issued.
func (s *Server) authenticateToken(ctx context.Context, raw string) (*User, bool) {
	u, _, ok := s.reviewToken(ctx, raw, nil)
	return u, ok
}

// reviewToken authenticates a token for audiences (nil: the apiserver's
// own) and returns its user and the audiences it is valid for (nil for a
// static token, which has none), as kube-apiserver's TokenReview does.
func (s *Server) reviewToken(ctx context.Context, raw string, audiences []string) (*User, []string, bool) {
	if u, ok := s.staticTokens[raw]; ok {
		return u, nil, true
	}
	if s.tokens == nil {
		return nil, nil, false
	}
	c, valid, err := s.tokens.verify(raw, time.Now(), audiences)
	if err != nil {
		return nil, nil, false
	}
	k := c.Kubernetes
	if c.Subject != serviceAccountUser(k.Namespace, k.ServiceAccount.Name) {
		return nil, nil, false
	}
	// The account and the bound pod are checked in the caches first, as
	// kube-apiserver checks them in its informers; only when a cache does
	// not say yes is etcd read (a cache may lag, never wrongly refuse).
	if !s.cachedServiceAccount(k.Namespace, k.ServiceAccount.Name, k.ServiceAccount.UID) {
		sa, err := s.serviceAccountByName(ctx, k.Namespace, k.ServiceAccount.Name)
		if err != nil || string(sa.UID) != k.ServiceAccount.UID {
			return nil, nil, false
		}
	}
	u := &User{Name: c.Subject, UID: k.ServiceAccount.UID,
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + k.Namespace, "system:authenticated"}}
	u.Extra = tokenExtra(c)
	if k.Pod != nil {
		if uid, deleting, ok := s.nodeGraph.boundPod(k.Namespace, k.Pod.Name); !ok || string(uid) != k.Pod.UID || deleting {
			obj, err := s.pods.Get(ctx, k.Namespace, k.Pod.Name)
			if err != nil || string(obj.(*corev1.Pod).UID) != k.Pod.UID || obj.(*corev1.Pod).DeletionTimestamp != nil {
				return nil, nil, false
			}
		}
	}
	if k.Secret != nil {
		obj, err := s.handlers["/v1/secrets"].store.Get(ctx, k.Namespace, k.Secret.Name)
		if err != nil || string(obj.(*corev1.Secret).UID) != k.Secret.UID {
			return nil, nil, false
		}
	}
	return u, valid, true
}

// tokenExtra is what a service-account token tells about its holder
// besides the account, under kube-apiserver's keys.
func tokenExtra(c *tokenClaims) map[string][]string {
	extra := map[string][]string{}
	if c.ID != "" {
		extra["authentication.kubernetes.io/credential-id"] = []string{"JTI=" + c.ID}
	}
	if p := c.Kubernetes.Pod; p != nil {
		extra["authentication.kubernetes.io/pod-name"] = []string{p.Name}
		extra["authentication.kubernetes.io/pod-uid"] = []string{p.UID}
	}
	if n := c.Kubernetes.Node; n != nil {
		extra["authentication.kubernetes.io/node-name"] = []string{n.Name}
		extra["authentication.kubernetes.io/node-uid"] = []string{n.UID}
	}
	if len(extra) == 0 {
		return nil
	}
	return extra
}

// cachedServiceAccount reports whether the cache holds the account with
// this UID.
func (s *Server) cachedServiceAccount(namespace, name, uid string) bool {
	obj, _, ok := s.serviceAccountCache.get(namespace, name)
	return ok && string(obj.(*corev1.ServiceAccount).UID) == uid
}

func (s *Server) serviceAccountByName(ctx context.Context, namespace, name string) (*corev1.ServiceAccount, error) {
	obj, err := s.handlers["/v1/serviceaccounts"].store.Get(ctx, namespace, name)
	if err != nil {
		return nil, err
	}
	return obj.(*corev1.ServiceAccount), nil
}

// loadTokenFile reads --token-auth-file, Kubernetes' CSV format:
// token,user,uid,"group1,group2".
func loadTokenFile(path string) (map[string]*User, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("token auth file: %w", err)
	}
	defer f.Close()
	r := csv.NewReader(f)
	r.FieldsPerRecord = -1
	r.Comment = '#'
	records, err := r.ReadAll()
	if err != nil {
		return nil, fmt.Errorf("token auth file %s: %w", path, err)
	}
	out := map[string]*User{}
	for i, rec := range records {
		if len(rec) < 3 || rec[0] == "" || rec[1] == "" {
			return nil, fmt.Errorf("token auth file %s: line %d: want token,user,uid[,\"groups\"]", path, i+1)
		}
		u := &User{Name: rec[1], Groups: []string{"system:authenticated"}}
		if len(rec) > 3 && rec[3] != "" {
			for _, g := range strings.Split(rec[3], ",") {
				u.Groups = append(u.Groups, strings.TrimSpace(g))
			}
		}
		out[rec[0]] = u
	}
	return out, nil
}
