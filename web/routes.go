package web

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/switchboard-dev/switchboard/static"
	"github.com/switchboard-dev/switchboard/web/internal/guard"
	"github.com/switchboard-dev/switchboard/web/internal/listed"
	"github.com/switchboard-dev/switchboard/web/internal/profiles"
)

// routes is the whole route table. Every route passes the Host check and
// gets the security headers; pages and SSE need a session (and a CSRF
// token to change anything); the API needs the bearer token.
func (s *Server) routes(profiles *profiles.Handlers) {
	e := s.echo
	// Headers first, so responses the checks refuse carry them too.
	e.Use(guard.SecureHeaders, guard.HostCheck(s.cfg.AllowedHosts), guard.RefuseCrossSite, limitBodies)

	// Public: health, login, static assets.
	e.GET("/healthz", s.handleHealth)
	e.GET("/livez", s.handleLive)
	e.GET("/readyz", s.handleReady)
	e.GET("/metrics", s.handleMetrics)
	e.GET("/login", s.handleLoginPage)
	e.POST("/login", s.handleLogin)
	e.GET(oidcStartPath, s.handleOIDCStart)
	e.GET(oidcCallbackPath, s.handleOIDCCallback)
	// The authorization server's redirect after a sign-in: no session
	// cookie comes with it (see signin.go).
	e.GET(callbackPath, s.handleOAuthCallback)
	e.GET("/static/*", echo.WrapHandler(http.StripPrefix("/static/", http.FileServer(http.FS(static.FS)))))

	// Browser: session cookie, CSRF on every state change.
	ui := e.Group("", s.requireSession, csrfProtect, s.authorize)
	ui.POST("/logout", s.handleLogout)
	ui.POST("/logout/everywhere", s.handleLogoutEverywhere)
	ui.GET("/events", s.handleEvents)
	ui.GET("/", s.handleServersPage)
	ui.GET("/fragments/servers", s.handleServersFragment)
	ui.GET("/servers/new", s.handleNewServerPage)
	ui.POST("/servers", s.handleCreateServer)
	ui.GET("/servers/:id", s.handleServerPage)
	ui.GET("/servers/:id/edit", s.handleEditServerPage)
	ui.POST("/servers/:id", s.handleUpdateServer)
	ui.POST("/servers/:id/delete", s.handleDeleteServer)
	ui.GET("/servers/:id/confirm", s.handleConfirmPage)
	ui.POST("/servers/:id/verify", s.handleVerify)
	ui.POST("/servers/:id/sandbox/allow", s.handleSandboxAllow)
	ui.POST("/servers/:id/sandbox/arg-paths", s.handleSandboxArgPaths)
	ui.POST("/servers/:id/signin", s.handleSignIn)
	ui.POST("/servers/:id/signout", s.handleSignOut)
	ui.GET("/servers/:id/tools", s.handleToolsFragment)
	ui.POST("/servers/:id/policy", s.handleSetPolicyForm)
	ui.POST("/servers/:id/listed-policy", listed.PolicyForm(s.deps.Store))
	ui.POST("/servers/:id/policies", s.handlePoliciesForm)
	ui.POST("/servers/:id/record-arguments", s.handleRecordArgsForm)
	ui.POST("/servers/:id/asks", s.handleAsksForm)
	ui.POST("/jobs/:id/cancel", s.handleCancelJob)
	ui.GET("/servers/:id/history", s.handleHistoryFragment)
	ui.GET("/servers/:id/changes", s.handleChangesPage)
	ui.POST("/servers/:id/approve", s.handleApproveForm)
	ui.POST("/verify-all", s.handleVerifyAll)
	ui.POST("/batches/:id/cancel", s.handleCancelBatch)
	ui.POST("/batches/:id/dismiss", s.handleDismissBatch)
	ui.GET("/import", s.handleImportPage)
	ui.POST("/import/preview", s.handleImportPreview)
	ui.POST("/import/apply", s.handleImportApply)
	ui.POST("/import/all", s.handleImportAll)
	ui.GET("/launches/confirm", s.handleLaunchesPage)
	ui.POST("/launches/confirm", s.handleConfirmLaunches)
	ui.GET("/export", s.handleExport)
	ui.POST("/export", s.handleExportSecrets)
	ui.GET("/agents", s.handleAgentsPage)
	ui.POST("/agents/token", s.handleRotateToken)
	ui.POST("/agents/clients", s.handleConnectForm)
	ui.POST("/agents/clients/:id/revoke", s.handleDisconnectForm)
	ui.POST("/agents/clients/:id/approvals", s.handleClientApprovalsForm)
	ui.POST("/agents/clients/:id/allowed/revoke", s.handleDisallowForm)
	ui.POST("/agents/connect/preview", s.handleConnectPreview)
	ui.POST("/agents/connect", s.handleConnect)
	ui.GET("/fragments/calls", s.handleCallsFragment)
	ui.GET("/profiles", profiles.List)
	ui.GET("/profiles/new", profiles.New)
	ui.POST("/profiles", profiles.Create)
	ui.GET("/profiles/:id", profiles.Edit)
	ui.POST("/profiles/:id", profiles.Update)
	ui.POST("/profiles/:id/delete", profiles.Delete)
	ui.POST("/approvals/:id", s.handleDecideForm)
	ui.GET("/tools/:agent", s.handleTryPage)
	ui.POST("/tools/:agent/try", s.handleTry)
	ui.POST("/tools/:agent/try/:call/answer", s.handleTryAnswer)
	ui.POST("/tools/:agent/try/:call/cancel", s.handleTryCancel)
	ui.GET("/people", s.handlePeoplePage)
	ui.GET("/replicas", s.handleReplicasPage)
	ui.GET("/registry", s.handleRegistryPage)
	ui.GET("/registry/add", s.handleRegistryAddPage)
	ui.POST("/registry/add", s.handleRegistryAddForm)
	ui.POST("/servers/:id/registry-update", s.handleRegistryUpdateForm)
	ui.POST("/people", s.handleAddPersonForm)
	ui.POST("/people/:id", s.handleSetRoleForm)
	ui.POST("/people/:id/delete", s.handleDeletePersonForm)
	ui.POST("/people/:id/token", s.handleNewTokenForm)

	// JSON API: bearer token.
	api := e.Group("/api/v1", s.requireBearer, s.authorize)
	api.GET("/servers", s.handleAPIListServers)
	api.POST("/servers", s.handleAPICreateServer)
	api.GET("/servers/:id", s.handleAPIGetServer)
	api.PUT("/servers/:id", s.handleAPIUpdateServer)
	api.DELETE("/servers/:id", s.handleAPIDeleteServer)
	api.POST("/servers/:id/verify", s.handleAPIVerify)
	api.GET("/servers/:id/tools", s.handleAPIServerTools)
	api.GET("/servers/:id/resources", listed.Resources(s.deps.Store, notFound))
	api.GET("/servers/:id/prompts", listed.Prompts(s.deps.Store, notFound))
	api.PUT("/servers/:id/tools/:name/policy", s.handleAPISetPolicy)
	api.POST("/servers/:id/policies", s.handleAPISetPolicies)
	api.PUT("/servers/:id/preset", s.handleAPISetPreset)
	api.GET("/servers/:id/tools/:name", s.handleAPITool)
	api.POST("/servers/:id/tools/:name/approve", s.handleAPIApproveTool)
	api.POST("/servers/:id/approve", s.handleAPIApproveChanges)
	api.POST("/servers/:id/listed/approve", listed.APIApprove(s.deps.Store))
	api.PUT("/servers/:id/listed/policy", listed.APIPolicy(s.deps.Store))
	api.GET("/servers/:id/history", s.handleAPIHistory)
	api.POST("/verify-all", s.handleAPIVerifyAll)
	api.GET("/launches", s.handleAPILaunches)
	api.GET("/clients", s.handleAPIClients)
	api.POST("/clients", s.handleAPIConnect)
	api.DELETE("/clients/:id", s.handleAPIDisconnect)
	api.PUT("/clients/:id", s.handleAPISetClient)
	api.DELETE("/clients/:id/allowed/:server/:tool", s.handleAPIDisallow)
	api.GET("/profiles", profiles.APIList)
	api.POST("/profiles", profiles.APICreate)
	api.GET("/profiles/:id", profiles.APIGet)
	api.PUT("/profiles/:id", profiles.APIUpdate)
	api.DELETE("/profiles/:id", profiles.APIDelete)
	api.GET("/profiles/:id/preview", profiles.APIPreview)
	api.GET("/batches/:id", s.handleAPIBatch)
	api.POST("/batches/:id/cancel", s.handleCancelBatch)
	api.GET("/jobs/:id", s.handleAPIJob)
	api.POST("/jobs/:id/cancel", s.handleAPICancelJob)
	api.GET("/tools", s.handleAPICatalog)
	api.GET("/backup", s.handleAPIBackup)
	api.GET("/approvals", s.handleAPIApprovals)
	api.POST("/approvals/:id", s.handleAPIDecide)
	api.GET("/calls", s.handleAPICalls)
	api.GET("/upstreams", s.handleAPIUpstreams)
	api.POST("/import", s.handleAPIImport)
	api.GET("/export", s.handleAPIExport)
	api.DELETE("/sessions", s.handleLogoutEverywhere)
	api.GET("/replicas", s.handleAPIReplicas)
	api.GET("/registry/servers", s.handleAPIRegistryServers)
	api.POST("/registry/add", s.handleAPIRegistryAdd)
	api.POST("/registry/refresh", s.handleAPIRegistryRefresh)
	api.POST("/servers/:id/registry-update", s.handleAPIRegistryUpdate)
	api.GET("/users", s.handleAPIUsers)
	api.POST("/users", s.handleAPIAddUser)
	api.PUT("/users/:id", s.handleAPIUpdateUser)
	api.DELETE("/users/:id", s.handleAPIDeleteUser)

	// The MCP endpoint for agents, with its own token (see web/gateway).
	e.Match([]string{http.MethodGet, http.MethodPost, http.MethodDelete}, "/mcp", s.handleMCP)

	// What authorize tells apart from a request that matched no route.
	s.routed = map[string]bool{}
	for _, r := range e.Routes() {
		s.routed[r.Method+" "+r.Path] = true
	}
}
