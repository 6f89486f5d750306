package pki

// ProxyUser is the node proxy's (and the host-gw route agent's) identity,
// which may list and watch Nodes, Services and EndpointSlices.
const ProxyUser = "system:kube-proxy"
