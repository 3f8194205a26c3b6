package mcpserver

import (
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// SetHTTPLimits sets, before HTTPHandler serves, what production fixes at
// sessionTimeout and maxSessionsPerPrincipal; zero keeps a limit as it is.
func (s *Server) SetHTTPLimits(timeout time.Duration, maxSessions int) {
	if timeout > 0 {
		s.live.mu.Lock()
		s.live.timeout = timeout
		s.live.mu.Unlock()
	}
	if maxSessions > 0 {
		s.maxSessions = maxSessions
	}
}

// Attached reports whether attaching ss is done: its registry Attach has
// returned (what is committed from then on is owed to it).
func (s *Server) Attached(ss *mcp.ServerSession) bool {
	_, ok := s.positions.Load(ss)
	return ok
}
