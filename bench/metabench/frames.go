package metabench

import (
	"syscall"

	"ustore/bench/servicebench"
	"ustore/proto"
)

// frameSizes encodes each op's request and response as the client and
// server do, with names of the workload's length, for the echo reference:
// op → request and response frame sizes. Readdir has none: its round
// trips carry a whole directory, not one request.
func frameSizes() (map[string][2]int, error) {
	attr := proto.Attr{Ino: 300, Mode: syscall.S_IFREG | 0o644, Nlink: 1}
	name := fileName(0, 1)
	m := map[string][2]int{}
	for op, rr := range map[string]struct {
		op  proto.Op
		req proto.Request
		rep proto.Reply
	}{
		OpCreate: {proto.OpCreate, &proto.Create{Dir: 300, Perm: 0o644, Name: name}, &attr},
		OpStat:   {proto.OpLookup, &proto.Lookup{Dir: 300, Name: name}, &attr},
		OpRename: {proto.OpRename, &proto.Rename{SrcDir: 300, SrcName: name, DstDir: 300, DstName: renamed(0, 1)},
			&proto.Empty{}},
		OpUnlink: {proto.OpUnlink, &proto.Unlink{Dir: 300, Name: renamed(0, 1)}, &proto.Empty{}},
		OpMkdir:  {proto.OpMkdir, &proto.Mkdir{Dir: 300, Perm: 0o755, Name: dirName(0, 1)}, &attr},
		OpRmdir:  {proto.OpRmdir, &proto.Rmdir{Dir: 300, Name: dirName(0, 1)}, &proto.Empty{}},
		OpDelete: {proto.OpUnlink, &proto.Unlink{Dir: 300, Name: bigName(1)}, &proto.Empty{}},
	} {
		sz, err := servicebench.FrameSizes(rr.op, rr.req, rr.rep)
		if err != nil {
			return nil, err
		}
		m[op] = sz
	}
	return m, nil
}
