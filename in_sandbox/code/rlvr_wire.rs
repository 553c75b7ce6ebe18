// Assert mode apart for Rust (issue 49): the wire of in_sandbox/code/rlvr_apart.h (the same tagged text and framing)
// by two traits on the declared types, the tests' runner and the candidate's server. Appended to both crates by
// verifiers/kinds/code/apart_rust.py, which generates the stubs (the tests' crate) and the dispatch (the
// candidate's). Reading is strict: a value that is not the declared type fails the test.
#[allow(dead_code)]
mod rlvr {
    use ::std::io::{BufRead, Read, Write};

    pub struct In<'a> {
        pub s: &'a [u8],
        pub want: &'static str,
    }

    pub fn bad(want: &str) -> ! {
        eprintln!("\nTest failed: the candidate's answer is not a {} (or is malformed on the wire)", want);
        ::std::process::exit(1)
    }

    impl<'a> In<'a> {
        pub fn tag(&mut self, t: u8) {
            if self.s.first() != Some(&t) {
                bad(self.want)
            }
            self.s = &self.s[1..];
        }
        pub fn peek(&self, t: u8) -> bool {
            self.s.first() == Some(&t)
        }
        pub fn token(&mut self, stop: u8) -> &'a str {
            let k = self.s.iter().position(|&c| c == stop).unwrap_or_else(|| bad(self.want));
            if k == 0 || k > 40 {
                bad(self.want)
            }
            let t = ::std::str::from_utf8(&self.s[..k]).unwrap_or_else(|_| bad(self.want));
            self.s = &self.s[k + 1..];
            t
        }
        pub fn count(&mut self, t: u8) -> usize {
            self.tag(t);
            let n: usize = self.token(b':').parse().unwrap_or_else(|_| bad(self.want));
            if n > self.s.len() {
                bad(self.want)
            }
            n
        }
    }

    pub trait Put {
        fn put(&self, o: &mut Vec<u8>);
    }
    pub trait Get: Sized {
        fn get(i: &mut In) -> Self;
    }

    macro_rules! ints {
        ($($t:ty),*) => {$(
            impl Put for $t {
                fn put(&self, o: &mut Vec<u8>) { o.extend(format!("i{};", self).bytes()) }
            }
            impl Get for $t {
                fn get(i: &mut In) -> Self {
                    i.tag(b'i');
                    i.token(b';').parse().unwrap_or_else(|_| bad(i.want))
                }
            }
        )*};
    }
    ints!(i8, i16, i32, i64, i128, isize, u8, u16, u32, u64, u128, usize);

    macro_rules! floats {
        ($($t:ty),*) => {$(
            impl Put for $t {
                fn put(&self, o: &mut Vec<u8>) {
                    let v = *self as f64;
                    let s = if v.is_nan() { "nan".to_string() } else if v.is_infinite() {
                        if v > 0.0 { "inf".to_string() } else { "-inf".to_string() } } else { format!("{:e}", v) };
                    o.extend(format!("d{};", s).bytes())
                }
            }
            impl Get for $t {
                fn get(i: &mut In) -> Self {
                    i.tag(b'd');
                    let t = i.token(b';');
                    let v: f64 = match t { "nan" => f64::NAN, "inf" => f64::INFINITY, "-inf" => f64::NEG_INFINITY,
                        _ => t.parse().unwrap_or_else(|_| bad(i.want)) };
                    v as $t
                }
            }
        )*};
    }
    floats!(f32, f64);

    impl Put for bool {
        fn put(&self, o: &mut Vec<u8>) {
            o.extend(if *self { b"b1;" } else { b"b0;" })
        }
    }
    impl Get for bool {
        fn get(i: &mut In) -> Self {
            i.tag(b'b');
            match i.token(b';') {
                "1" => true,
                "0" => false,
                _ => bad(i.want),
            }
        }
    }
    impl Put for char {
        fn put(&self, o: &mut Vec<u8>) {
            (*self as u32).put(o)
        }
    }
    impl Get for char {
        fn get(i: &mut In) -> Self {
            ::std::char::from_u32(u32::get(i)).unwrap_or_else(|| bad(i.want))
        }
    }
    impl Put for str {
        fn put(&self, o: &mut Vec<u8>) {
            o.extend(format!("s{}:", self.len()).bytes());
            o.extend(self.bytes())
        }
    }
    impl Put for String {
        fn put(&self, o: &mut Vec<u8>) {
            self.as_str().put(o)
        }
    }
    impl Get for String {
        fn get(i: &mut In) -> Self {
            let n = i.count(b's');
            let s = String::from_utf8(i.s[..n].to_vec()).unwrap_or_else(|_| bad(i.want));
            i.s = &i.s[n..];
            s
        }
    }
    impl<T: Put> Put for [T] {
        fn put(&self, o: &mut Vec<u8>) {
            o.extend(format!("l{}:", self.len()).bytes());
            for x in self {
                x.put(o)
            }
        }
    }
    impl<T: Put> Put for Vec<T> {
        fn put(&self, o: &mut Vec<u8>) {
            self.as_slice().put(o)
        }
    }
    impl<T: Get> Get for Vec<T> {
        fn get(i: &mut In) -> Self {
            let n = i.count(b'l');
            (0..n).map(|_| T::get(i)).collect()
        }
    }
    impl<T: Put> Put for Option<T> {
        fn put(&self, o: &mut Vec<u8>) {
            match self {
                None => o.extend(b"n;"),
                Some(x) => {
                    o.push(b'o');
                    x.put(o)
                }
            }
        }
    }
    impl<T: Get> Get for Option<T> {
        fn get(i: &mut In) -> Self {
            if i.peek(b'n') {
                i.tag(b'n');
                i.tag(b';');
                return None;
            }
            i.tag(b'o');
            Some(T::get(i))
        }
    }
    impl<K: Put, V: Put> Put for ::std::collections::HashMap<K, V> {
        fn put(&self, o: &mut Vec<u8>) {
            o.extend(format!("m{}:", self.len()).bytes());
            for (k, v) in self {
                k.put(o);
                v.put(o)
            }
        }
    }
    impl<K: Get + ::std::hash::Hash + Eq, V: Get> Get for ::std::collections::HashMap<K, V> {
        fn get(i: &mut In) -> Self {
            let n = i.count(b'm');
            (0..n).map(|_| (K::get(i), V::get(i))).collect()
        }
    }
    impl<K: Put, V: Put> Put for ::std::collections::BTreeMap<K, V> {
        fn put(&self, o: &mut Vec<u8>) {
            o.extend(format!("m{}:", self.len()).bytes());
            for (k, v) in self {
                k.put(o);
                v.put(o)
            }
        }
    }
    impl<K: Get + Ord, V: Get> Get for ::std::collections::BTreeMap<K, V> {
        fn get(i: &mut In) -> Self {
            let n = i.count(b'm');
            (0..n).map(|_| (K::get(i), V::get(i))).collect()
        }
    }
    impl Put for () {
        fn put(&self, _o: &mut Vec<u8>) {}
    }
    impl Get for () {
        fn get(_i: &mut In) -> Self {}
    }
    macro_rules! tuples {
        ($($n:expr => ($($t:ident $k:tt),*)),*) => {$(
            impl<$($t: Put),*> Put for ($($t,)*) {
                fn put(&self, o: &mut Vec<u8>) { o.extend(format!("t{}:", $n).bytes()); $(self.$k.put(o);)* }
            }
            impl<$($t: Get),*> Get for ($($t,)*) {
                fn get(i: &mut In) -> Self { if i.count(b't') != $n { bad(i.want) } ($($t::get(i),)*) }
            }
        )*};
    }
    tuples!(2 => (A 0, B 1), 3 => (A 0, B 1, C 2), 4 => (A 0, B 1, C 2, D 3));

    fn send(w: &mut dyn Write, msg: &[u8]) -> bool {
        w.write_all(format!("{}\n", msg.len()).as_bytes()).is_ok() && w.write_all(msg).is_ok() && w.flush().is_ok()
    }
    fn recv(r: &mut dyn BufRead) -> Option<Vec<u8>> {
        let mut head = String::new();
        if r.read_line(&mut head).ok()? == 0 {
            return None;
        }
        let n: usize = head.trim_end().parse().ok()?;
        let mut buf = vec![0u8; n];
        r.read_exact(&mut buf).ok()?;
        Some(buf)
    }

    // -- the tests' side ----------------------------------------------------------------------------------------
    pub static CALLS: ::std::sync::atomic::AtomicUsize = ::std::sync::atomic::AtomicUsize::new(0);
    pub static ASSERTS: ::std::sync::atomic::AtomicUsize = ::std::sync::atomic::AtomicUsize::new(0);
    pub struct Runner {
        child: ::std::process::Child,
        req: ::std::process::ChildStdin,
        rep: ::std::io::BufReader<::std::process::ChildStdout>,
        sentinel: String,
    }
    static mut RUNNER: Option<Runner> = None;
    extern "C" {
        fn prctl(option: i32, ...) -> i32;
        fn dup(fd: i32) -> i32;
        fn dup2(a: i32, b: i32) -> i32;
    }

    pub fn start() {
        unsafe { prctl(4, 0u64, 0u64, 0u64, 0u64) }; // PR_SET_DUMPABLE 0: the candidate cannot trace or read us
        let sentinel = ::std::fs::read_to_string("rlvr_nonce").unwrap_or_else(|_| die("the tests' runner has no sentinel"));
        for f in ["rlvr_nonce", "main", "main.rs"] {
            let _ = ::std::fs::remove_file(f); // the tests' sentinel, binary and source
        }
        let mut child = ::std::process::Command::new("./rlvr_cand")
            .stdin(::std::process::Stdio::piped())
            .stdout(::std::process::Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| die(&format!("the tests' runner cannot start the candidate: {}", e)));
        let req = child.stdin.take().unwrap();
        let rep = ::std::io::BufReader::new(child.stdout.take().unwrap());
        unsafe { RUNNER = Some(Runner { child, req, rep, sentinel: sentinel.trim().to_string() }) };
    }

    fn die(why: &str) -> ! {
        eprintln!("\n{}", why);
        ::std::process::exit(1)
    }

    fn gone(r: &mut Runner) -> ! {
        match r.child.wait() {
            Ok(st) if st.success() => {
                eprintln!("\nthe candidate's program ended before the tests finished");
                ::std::process::exit(0) // exit 0 without the sentinel: never a pass (code.early_exit)
            }
            Ok(st) => die(&format!("the candidate's process ended during a call: {}", st)),
            Err(e) => die(&format!("the candidate's process is lost: {}", e)),
        }
    }

    pub fn call<R: Get>(req: Vec<u8>, want: &'static str) -> R {
        CALLS.fetch_add(1, ::std::sync::atomic::Ordering::SeqCst);
        let r = unsafe { RUNNER.as_mut().unwrap() };
        if !send(&mut r.req, &req) {
            gone(r)
        }
        let rep = recv(&mut r.rep).unwrap_or_else(|| gone(r));
        let mut i = In { s: &rep, want };
        if i.peek(b'x') {
            i.tag(b'x');
            panic!("the candidate panicked: {}", String::get(&mut i));
        }
        i.tag(b'r');
        let v = R::get(&mut i);
        if !i.s.is_empty() {
            bad(want)
        }
        v
    }

    pub fn finish() {
        let r = unsafe { RUNNER.as_mut().unwrap() };
        let (a, c) = (ASSERTS.load(::std::sync::atomic::Ordering::SeqCst), CALLS.load(::std::sync::atomic::Ordering::SeqCst));
        let mut out = ::std::io::stdout();
        let _ = write!(out, "\n{}\n{}:ran:{{\"tests\":1,\"asserts\":{},\"calls\":{}}}\n", r.sentinel, r.sentinel, a, c);
        let _ = out.flush();
        let _ = r.child.kill();
        ::std::process::exit(0)
    }

    // -- the candidate's side -------------------------------------------------------------------------------
    pub fn serve(dispatch: fn(i64, &mut In, &mut Vec<u8>)) {
        // the replies go to the stdout we were given; the candidate's prints from now on to stderr
        let fd = unsafe {
            let fd = dup(1);
            dup2(2, 1);
            fd
        };
        let mut rep: ::std::fs::File = unsafe { ::std::os::unix::io::FromRawFd::from_raw_fd(fd) };
        let stdin = ::std::io::stdin();
        let mut req = stdin.lock();
        while let Some(msg) = recv(&mut req) {
            let mut i = In { s: &msg, want: "call" };
            let f = i64::get(&mut i);
            let mut o = vec![b'r'];
            let got = ::std::panic::catch_unwind(::std::panic::AssertUnwindSafe(|| {
                let mut i = In { s: i.s, want: "call" };
                dispatch(f, &mut i, &mut o);
                o
            }));
            let o = match got {
                Ok(o) => o,
                Err(e) => {
                    let why = e.downcast_ref::<String>().cloned()
                        .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
                        .unwrap_or_else(|| "a panic".to_string());
                    let mut o = vec![b'x'];
                    why.put(&mut o);
                    o
                }
            };
            if !send(&mut rep, &o) {
                break;
            }
        }
        ::std::process::exit(0)
    }
}
