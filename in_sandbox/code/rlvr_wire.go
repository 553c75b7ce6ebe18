// Assert mode apart for Go (issue 49): the wire of in_sandbox/code/rlvr_apart.h (the same tagged text and
// framing), by reflection on the entry function's declared types, and the two sides' loops. Compiled into both
// executables (package main); verifiers/kinds/code/apart_go.py generates the stubs (the tests' side) and the
// dispatch (the candidate's side). Reading is strict: a value that is not the declared type fails the test.
package main

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"reflect"
	"strconv"
	"strings"
	"syscall"
)

func rlvrPut(b *strings.Builder, v reflect.Value) {
	switch v.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		fmt.Fprintf(b, "i%d;", v.Int())
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		fmt.Fprintf(b, "i%d;", v.Uint())
	case reflect.Float32, reflect.Float64:
		f := v.Float()
		switch {
		case math.IsNaN(f):
			b.WriteString("dnan;")
		case math.IsInf(f, 1):
			b.WriteString("dinf;")
		case math.IsInf(f, -1):
			b.WriteString("d-inf;")
		default:
			b.WriteString("d" + strconv.FormatFloat(f, 'g', -1, 64) + ";")
		}
	case reflect.Bool:
		if v.Bool() {
			b.WriteString("b1;")
		} else {
			b.WriteString("b0;")
		}
	case reflect.String:
		fmt.Fprintf(b, "s%d:%s", len(v.String()), v.String())
	case reflect.Slice, reflect.Array:
		if v.Kind() == reflect.Slice && v.IsNil() {
			b.WriteString("n;")
			return
		}
		fmt.Fprintf(b, "l%d:", v.Len())
		for i := 0; i < v.Len(); i++ {
			rlvrPut(b, v.Index(i))
		}
	case reflect.Map:
		if v.IsNil() {
			b.WriteString("n;")
			return
		}
		fmt.Fprintf(b, "m%d:", v.Len())
		it := v.MapRange()
		for it.Next() {
			rlvrPut(b, it.Key())
			rlvrPut(b, it.Value())
		}
	default:
		panic("rlvr: a " + v.Type().String() + " does not cross")
	}
}

type rlvrIn struct {
	s    string
	want string
}

func (in *rlvrIn) bad() {
	fmt.Fprintf(os.Stderr, "\nTest failed: the candidate's answer is not a %s (or is malformed on the wire)\n", in.want)
	os.Exit(1)
}

func (in *rlvrIn) tag(t byte) {
	if len(in.s) == 0 || in.s[0] != t {
		in.bad()
	}
	in.s = in.s[1:]
}

func (in *rlvrIn) token(stop byte) string {
	k := strings.IndexByte(in.s, stop)
	if k <= 0 || k > 40 {
		in.bad()
	}
	t := in.s[:k]
	in.s = in.s[k+1:]
	return t
}

func (in *rlvrIn) count(t byte) int {
	in.tag(t)
	n, err := strconv.Atoi(in.token(':'))
	if err != nil || n < 0 || n > len(in.s) {
		in.bad()
	}
	return n
}

func (in *rlvrIn) null() bool {
	if strings.HasPrefix(in.s, "n;") {
		in.s = in.s[2:]
		return true
	}
	return false
}

func rlvrGet(in *rlvrIn, v reflect.Value) {
	switch v.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		in.tag('i')
		x, err := strconv.ParseInt(in.token(';'), 10, 64)
		if err != nil || v.OverflowInt(x) {
			in.bad()
		}
		v.SetInt(x)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		in.tag('i')
		x, err := strconv.ParseUint(in.token(';'), 10, 64)
		if err != nil || v.OverflowUint(x) {
			in.bad()
		}
		v.SetUint(x)
	case reflect.Float32, reflect.Float64:
		in.tag('d')
		t := in.token(';')
		x, err := strconv.ParseFloat(strings.Replace(t, "nan", "NaN", 1), 64)
		if err != nil && !strings.Contains(err.Error(), "range") {
			in.bad()
		}
		v.SetFloat(x)
	case reflect.Bool:
		in.tag('b')
		switch in.token(';') {
		case "1":
			v.SetBool(true)
		case "0":
			v.SetBool(false)
		default:
			in.bad()
		}
	case reflect.String:
		n := in.count('s')
		v.SetString(in.s[:n])
		in.s = in.s[n:]
	case reflect.Slice:
		if in.null() {
			v.Set(reflect.Zero(v.Type()))
			return
		}
		n := in.count('l')
		s := reflect.MakeSlice(v.Type(), n, n)
		for i := 0; i < n; i++ {
			rlvrGet(in, s.Index(i))
		}
		v.Set(s)
	case reflect.Array:
		if in.count('l') != v.Len() {
			in.bad()
		}
		for i := 0; i < v.Len(); i++ {
			rlvrGet(in, v.Index(i))
		}
	case reflect.Map:
		if in.null() {
			v.Set(reflect.Zero(v.Type()))
			return
		}
		n := in.count('m')
		m := reflect.MakeMapWithSize(v.Type(), n)
		for i := 0; i < n; i++ {
			k, x := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
			rlvrGet(in, k)
			rlvrGet(in, x)
			m.SetMapIndex(k, x)
		}
		v.Set(m)
	default:
		in.bad()
	}
}

func rlvrSend(w io.Writer, s string) error {
	_, err := io.WriteString(w, strconv.Itoa(len(s))+"\n"+s)
	return err
}

func rlvrRecv(r *bufio.Reader) (string, error) {
	head, err := r.ReadString('\n')
	if err != nil {
		return "", err
	}
	n, err := strconv.Atoi(strings.TrimSuffix(head, "\n"))
	if err != nil || n < 0 {
		return "", io.ErrUnexpectedEOF
	}
	buf := make([]byte, n)
	_, err = io.ReadFull(r, buf)
	return string(buf), err
}

// -- the tests' side -------------------------------------------------------------------------------------------
var rlvrReq io.WriteCloser
var rlvrRep *bufio.Reader
var rlvrChild *exec.Cmd
var rlvrCalls, rlvrAsserts int
var rlvrSentinel string

func rlvrDie(why string) {
	fmt.Fprintf(os.Stderr, "\n%s\n", why)
	os.Exit(1)
}

func rlvrStart() {
	syscall.RawSyscall(syscall.SYS_PRCTL, 4, 0, 0) // PR_SET_DUMPABLE 0: the candidate cannot trace or read this process
	b, err := os.ReadFile("rlvr_nonce")
	if err != nil {
		rlvrDie("the tests' runner has no sentinel")
	}
	rlvrSentinel = strings.TrimSpace(string(b))
	for _, f := range []string{"rlvr_nonce", "main", "main.go"} { // the tests' sentinel, binary and source
		os.Remove(f)
	}
	reqR, reqW, err1 := os.Pipe()
	repR, repW, err2 := os.Pipe()
	if err1 != nil || err2 != nil {
		rlvrDie("the tests' runner cannot make its pipes")
	}
	rlvrChild = exec.Command("./rlvr_cand")
	rlvrChild.Stdout, rlvrChild.Stderr = os.Stderr, os.Stderr // the candidate's prints: never the verdict's stdout
	rlvrChild.ExtraFiles = []*os.File{reqR, repW}           // its fd 3 and 4
	if err := rlvrChild.Start(); err != nil {
		rlvrDie("the tests' runner cannot start the candidate: " + err.Error())
	}
	reqR.Close()
	repW.Close()
	rlvrReq, rlvrRep = reqW, bufio.NewReader(repR)
}

func rlvrGone() {
	err := rlvrChild.Wait()
	if err == nil {
		fmt.Fprintln(os.Stderr, "\nthe candidate's program ended before the tests finished")
		os.Exit(0) // exit 0 without the sentinel: never a pass (code.early_exit)
	}
	rlvrDie("the candidate's process ended during a call: " + err.Error())
}

func rlvrCall(f int, want string, args []interface{}, results []interface{}) {
	rlvrCalls++
	var b strings.Builder
	fmt.Fprintf(&b, "i%d;", f)
	for _, a := range args {
		rlvrPut(&b, reflect.ValueOf(a))
	}
	if rlvrSend(rlvrReq, b.String()) != nil {
		rlvrGone()
	}
	rep, err := rlvrRecv(rlvrRep)
	if err != nil {
		rlvrGone()
	}
	in := &rlvrIn{rep, want}
	if strings.HasPrefix(in.s, "x") {
		in.s = in.s[1:]
		var why string
		rlvrGet(in, reflect.ValueOf(&why).Elem())
		panic("the candidate panicked: " + why)
	}
	in.tag('r')
	for _, r := range results {
		rlvrGet(in, reflect.ValueOf(r).Elem())
	}
	if in.s != "" {
		in.bad()
	}
}

func rlvrFinish() {
	fmt.Fprintf(os.Stdout, "\n%s\n%s:ran:{\"tests\":1,\"asserts\":%d,\"calls\":%d}\n", rlvrSentinel, rlvrSentinel,
		rlvrAsserts, rlvrCalls)
	rlvrReq.Close()
	rlvrChild.Process.Kill()
	os.Exit(0)
}

// -- the candidate's side --------------------------------------------------------------------------------------
func rlvrServe(dispatch func(f int64, in *rlvrIn) []interface{}) {
	req, rep := bufio.NewReader(os.NewFile(3, "rlvr_req")), os.NewFile(4, "rlvr_rep")
	for {
		msg, err := rlvrRecv(req)
		if err != nil {
			os.Exit(0)
		}
		rlvrSend(rep, rlvrAnswer(dispatch, msg))
	}
}

func rlvrAnswer(dispatch func(f int64, in *rlvrIn) []interface{}, msg string) (out string) {
	var b strings.Builder
	defer func() {
		if p := recover(); p != nil {
			why := fmt.Sprint(p)
			out = fmt.Sprintf("xs%d:%s", len(why), why)
		}
	}()
	in := &rlvrIn{msg, "call"}
	var f int64
	rlvrGet(in, reflect.ValueOf(&f).Elem())
	results := dispatch(f, in)
	b.WriteString("r")
	for _, r := range results {
		rlvrPut(&b, reflect.ValueOf(r))
	}
	return b.String()
}
