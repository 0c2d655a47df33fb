// Package lint holds repository-wide checks that run as tests: the direction
// of imports between ustore's packages (DESIGN.md, "Packages and the
// direction of imports"). It has no code of its own.
package lint
