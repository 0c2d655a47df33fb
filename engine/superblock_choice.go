package engine

import (
	"errors"
	"fmt"

	"ustore/dev"
)

// Choosing the superblock to mount among the four copies.
//
// What a crash can leave: a superblock write of sequence K goes to both
// copies of slot pair K mod 2 in one batch, and is acknowledged only after
// the flush that follows it. So when it starts, both copies of K-1 (the
// other pair) are durable, and a power cut during it leaves each copy of
// pair K mod 2 holding K, its old sequence K-2, or garbage — in any
// combination. An acknowledged K is on both copies; losing it takes two
// damaged copies, 512 KiB apart.
//
// The decision, with S the highest sequence of any checksummed copy and K
// the highest of any sound one (sound: checksum and fields valid):
//
//	no copy carries the magic                     ErrNotFormatted
//	copies carry it, none checksummed             ErrCorruption: all damaged
//	S > K (or no sound copy), the copy of S
//	  is of another version                       ErrFormatVersion
//	S > K, the copy of S has impossible fields    ErrCorruption: refuse — mounting K
//	                                              would roll back a superblock that
//	                                              was written whole, maybe acknowledged
//	K's twin is not sound at K                    mount K, warn, rewrite the twin
//	                                              (a crash mid-write, or rot: K is
//	                                              the newest either way)
//	K's twin is sound at K but differs            ErrCorruption (no write makes this)
//	a copy of the other pair is sound at < K,     mount K; damage in that pair is
//	  or blank while K is 1 (mkfs)                harmless: K+1 was never acknowledged
//	                                              (it would be on both copies); the
//	                                              next superblock write replaces it
//	neither copy of the other pair proves that    mount K, WARN: a crash that tore
//	                                              both copies of K+1 leaves this, or
//	                                              else acknowledged K+1 was lost;
//	                                              fsck fails
//
// A torn write never yields a valid checksum (a 1-in-2^32 accident aside),
// so the refusals are never reached from a crash-consistent image.

// superChoice is what mount decided, kept for fsck.
type superChoice struct {
	sb     Superblock // its Bytenr is its primary slot
	from   uint64     // the copy it was read from
	repair []uint64   // copies mount rewrites from sb: K's twin when not sound at K
	// repaired: the copies of repair that mount did rewrite.
	repaired []uint64
	damage   []error // every copy that is not what it should be, and why
	lost     error   // non-nil: a superblock newer than sb may have been acknowledged
}

// readSuperCopies reads the four copies; a read error makes a copy damaged.
func readSuperCopies(d dev.Device) [4]superCopy {
	var copies [4]superCopy
	for i, off := range superCopyOffsets {
		buf := dev.AlignedBuffer(superSize)
		if err := d.Read([]dev.IO{{Off: int64(off), Buf: buf}}); err != nil {
			copies[i] = superCopy{off: off, state: copyDamaged, err: fmt.Errorf("%w: superblock copy at %d: %w", ErrCorruption, off, err)}
			continue
		}
		copies[i] = decodeSuperCopy(buf, off)
	}
	return copies
}

// chooseSuperblock applies the decision table above.
func chooseSuperblock(copies [4]superCopy) (superChoice, error) {
	var top, best *superCopy
	anyMagic := false
	var errs []error
	for i := range copies {
		c := &copies[i]
		anyMagic = anyMagic || c.magic
		if c.err != nil {
			errs = append(errs, c.err)
		}
		if c.state >= copyImpossible && (top == nil || c.sb.Seq > top.sb.Seq) {
			top = c
		}
		// Ties go to the lower offset: the primary.
		if c.state == copySound && (best == nil || c.sb.Seq > best.sb.Seq) {
			best = c
		}
	}
	switch {
	case top == nil && !anyMagic:
		return superChoice{}, fmt.Errorf("%w: %w", ErrNotFormatted, errors.Join(errs...))
	case top == nil:
		return superChoice{}, fmt.Errorf("%w: every superblock copy is damaged: %w", ErrCorruption, errors.Join(errs...))
	case best == nil || top.sb.Seq > best.sb.Seq:
		if top.state == copyVersion {
			return superChoice{}, top.err
		}
		older := "no sound copy exists"
		if best != nil {
			older = fmt.Sprintf("mounting the newest sound one, seq %d at %d, would roll back a superblock that was written whole", best.sb.Seq, best.off)
		}
		return superChoice{}, fmt.Errorf("%w; %s: refusing to mount", top.err, older)
	}
	k := best.sb.Seq
	ch := superChoice{sb: best.sb, from: best.off}
	ch.sb.Bytenr = slotOffset(k)
	pair := int(k % 2)
	twin := &copies[pair]
	if twin == best {
		twin = &copies[pair+2]
	}
	switch {
	case twin.state != copySound:
		ch.repair = append(ch.repair, twin.off)
		ch.damage = append(ch.damage, fmt.Errorf("superblock seq %d: %w; read from its twin at %d", k, twin.err, best.off))
	case twin.sb.Seq != k:
		// Only a crash during the write of k leaves this (or a lost write).
		ch.repair = append(ch.repair, twin.off)
		ch.damage = append(ch.damage, fmt.Errorf("superblock seq %d: the copy at %d holds seq %d, the write of seq %d did not reach it; read from its twin at %d",
			k, twin.off, twin.sb.Seq, k, best.off))
	default:
		a, b := twin.sb, best.sb
		a.Bytenr, b.Bytenr = 0, 0
		if a != b {
			return superChoice{}, fmt.Errorf("%w: the superblock copies at %d and %d both hold seq %d, with different contents", ErrCorruption, best.off, twin.off, k)
		}
	}
	// The other pair: proof that seq k+1 was never acknowledged.
	proof := false
	var others []error
	for _, c := range []*superCopy{&copies[1-pair], &copies[3-pair]} {
		switch {
		case c.state == copySound && c.sb.Seq < k && c.sb.Fsid == best.sb.Fsid:
			proof = true
		case c.state == copyBlank && k == 1:
			proof = true
		case c.state == copySound:
			err := fmt.Errorf("superblock copy at %d holds seq %d of filesystem %x, not an older seq of this one", c.off, c.sb.Seq, c.sb.Fsid)
			others = append(others, err)
			ch.damage = append(ch.damage, err)
		default:
			others = append(others, c.err)
			ch.damage = append(ch.damage, fmt.Errorf("%w (not the newest: the next superblock write replaces it)", c.err))
		}
	}
	if !proof {
		ch.lost = fmt.Errorf("superblock: mounted seq %d, and neither copy of the slot that seq %d would use is sound (%w): "+
			"a crash during the write of seq %d leaves this, or else a superblock acknowledged after seq %d is lost",
			k, k+1, errors.Join(others...), k+1, k)
	}
	return ch, nil
}
