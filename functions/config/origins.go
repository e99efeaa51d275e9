package config

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
)

// checkOrigins accepts space-separated origins as browsers send them: scheme://host[:port].
func checkOrigins(list string) error {
	if strings.Contains(list, ",") {
		return errors.New("separate origins with spaces, not commas")
	}
	for _, origin := range strings.Fields(list) {
		if err := checkOrigin(origin); err != nil {
			return fmt.Errorf("%q is not an origin: %w", origin, err)
		}
	}
	return nil
}

// defaultPorts are the ports browsers leave out of an origin.
var defaultPorts = map[string]string{"http": "80", "https": "443"}

func checkOrigin(origin string) error {
	if strings.Contains(origin, "*") {
		return errors.New("wildcards are not supported: list each origin as scheme://host[:port]")
	}
	u, err := url.Parse(origin)
	if err != nil || u.Scheme == "" || u.Host == "" || u.Opaque != "" {
		return errors.New("write it as scheme://host[:port], e.g. https://app.example.com")
	}
	switch {
	case u.User != nil:
		return errors.New("an origin has no user name or password")
	case u.Path != "" || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || strings.ContainsAny(origin, "?#"):
		return errors.New("an origin has no path, query or fragment, not even a trailing /")
	case origin != strings.ToLower(origin):
		return errors.New("write it in lower case, as browsers send it")
	}
	if port := u.Port(); port != "" || strings.HasSuffix(u.Host, ":") {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 || port != strconv.Itoa(n) {
			return errors.New("the port must be a number from 1 to 65535")
		}
		if defaultPorts[u.Scheme] == port {
			return fmt.Errorf("browsers leave out the default port %s of %s: write %s://%s", port, u.Scheme, u.Scheme, u.Hostname())
		}
	}
	if u.Scheme+"://"+u.Host != origin {
		return errors.New("write it as scheme://host[:port], e.g. https://app.example.com")
	}
	return nil
}
