package extshards

import "time"

// SetBeforeRead makes f call hook before each fold's reads; an error it returns fails them.
func SetBeforeRead(f *Folder, hook func(doc string) error) { f.beforeRead = hook }

// SetBetweenReads makes f call hook between a fold's read of the main document and of its shards.
func SetBetweenReads(f *Folder, hook func(doc string)) { f.betweenReads = hook }

// SetMaxWait sets how long f keeps shards under a missing main document (MaxWait).
func SetMaxWait(f *Folder, d time.Duration) { f.maxWait = d }
