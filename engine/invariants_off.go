//go:build !invariants

package engine

const invariantsOn = false
