package controller

import (
	"minik/client"
)

// accountNamespace holds the controllers' service accounts.
const accountNamespace = "kube-system"

// accountClients gives each controller a client that acts as its service
// account (Config.UseServiceAccountCredentials). The manager's client
// creates the account when missing and gets its tokens; controllers that
// share an account share its client. All of them share one connection.
type accountClients struct {
	issuer  *client.Client
	clients map[string]*client.Client
}

func newAccountClients(issuer *client.Client) *accountClients {
	return &accountClients{issuer: issuer, clients: map[string]*client.Client{}}
}

// client returns the client of kube-system/account.
func (a *accountClients) client(account string) *client.Client {
	if c, ok := a.clients[account]; ok {
		return c
	}
	tokens := client.NewServiceAccountTokens(a.issuer, accountNamespace, account)
	c := a.issuer.WithTokenSource(tokens, "minik-controller/"+account)
	a.clients[account] = c
	return c
}
