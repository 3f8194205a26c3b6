package mcpserver

import "time"

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
