package httpapi

// isLoopback is IsLoopbackHost under the name the tests use.
var isLoopback = IsLoopbackHost
