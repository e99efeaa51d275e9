package callerauth

import (
	"sync"
	"time"
)

// userState is what a revocation check needs of a user's account.
type userState struct {
	exists, disabled bool
	validAfterMillis int64
}

// userCache keeps up to max users' states for ttl (0: none). Safe for concurrent use.
type userCache struct {
	ttl time.Duration
	max int
	now func() time.Time

	mu    sync.Mutex
	users map[string]cachedUser
}

type cachedUser struct {
	state   userState
	expires time.Time
}

func newUserCache(ttl time.Duration, max int) *userCache {
	return &userCache{ttl: ttl, max: max, now: time.Now, users: map[string]cachedUser{}}
}

// get returns uid's state if put within ttl.
func (c *userCache) get(uid string) (userState, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	u, ok := c.users[uid]
	if !ok || !c.now().Before(u.expires) {
		return userState{}, false
	}
	return u.state, true
}

// put keeps uid's state for ttl.
func (c *userCache) put(uid string, state userState) {
	if c.ttl <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	if _, ok := c.users[uid]; !ok && len(c.users) >= c.max {
		for id, u := range c.users {
			if !now.Before(u.expires) || len(c.users) >= c.max {
				delete(c.users, id)
			}
		}
	}
	c.users[uid] = cachedUser{state: state, expires: now.Add(c.ttl)}
}
