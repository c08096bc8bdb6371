//! Differential tests with real-world static binaries from Debian's arm64 archive:
//! busybox (busybox-static) and bash (bash-static). Each case is a single process (no pipes,
//! no command substitution, no external commands: armada does not implement fork/exec),
//! run under both `armada run` and `qemu-aarch64`; see tests/common/mod.rs.
//!
//! The .debs are expected in target/guest-deps/ (scripts/test puts them there); outside CI
//! the test tries `apt-get download busybox-static:arm64 bash-static:arm64` itself.
//! Set ARMADA_TEST_CHECK_NOFORK=1 to verify (with qemu -strace) that no case forks.

mod common;

use common::Case;
use std::collections::BTreeSet;
use std::ffi::OsString;
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;

const TEST: &str = "busybox_and_bash_match_qemu";

/// Paths of the extracted busybox and bash-static binaries.
fn guest_tools() -> Result<(PathBuf, PathBuf), String> {
    static TOOLS: OnceLock<Result<(PathBuf, PathBuf), String>> = OnceLock::new();
    TOOLS
        .get_or_init(|| {
            let dir = common::deps_dir();
            let pkgs = ["busybox-static", "bash-static"];
            let missing: Vec<&str> = pkgs.iter().copied().filter(|p| common::find_deb(&dir, p).is_none()).collect();
            if !missing.is_empty() {
                if common::in_ci() {
                    return Err(format!("{} not found in {} (scripts/test downloads them)", missing.join(", "), dir.display()));
                }
                fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
                let specs: Vec<String> = missing.iter().map(|p| format!("{p}:arm64")).collect();
                common::loud(&format!("{TEST}: downloading {} into {}", specs.join(" "), dir.display()));
                let out = Command::new("apt-get").arg("download").args(&specs).current_dir(&dir).output();
                let ok = matches!(&out, Ok(o) if o.status.success());
                if !ok || pkgs.iter().any(|p| common::find_deb(&dir, p).is_none()) {
                    let why = match out {
                        Ok(o) => String::from_utf8_lossy(&o.stderr).trim().to_string(),
                        Err(e) => e.to_string(),
                    };
                    return Err(format!(
                        "arm64 debs of busybox-static/bash-static are not in {} and `apt-get download` failed ({why}); \
                         `dpkg --add-architecture arm64 && apt-get update` may be needed",
                        dir.display()
                    ));
                }
            }
            let bb = common::extract(&common::find_deb(&dir, "busybox-static").unwrap())?.join("bin/busybox");
            let bash = common::extract(&common::find_deb(&dir, "bash-static").unwrap())?.join("bin/bash-static");
            for p in [&bb, &bash] {
                if !p.is_file() {
                    return Err(format!("{} missing after extracting the deb", p.display()));
                }
            }
            Ok((bb, bash))
        })
        .clone()
}

fn base64(data: &[u8]) -> String {
    const T: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut s = String::new();
    for (i, c) in data.chunks(3).enumerate() {
        let n = (c[0] as u32) << 16
            | (*c.get(1).unwrap_or(&0) as u32) << 8
            | *c.get(2).unwrap_or(&0) as u32;
        for k in 0..4 {
            if k <= c.len() {
                s.push(T[(n >> (18 - 6 * k) & 63) as usize] as char);
            } else {
                s.push('=');
            }
        }
        if i % 19 == 18 {
            s.push('\n');
        }
    }
    s.push('\n');
    s
}

/// Output of a command run by the oracle in a scratch dir holding `files`; used to make
/// inputs such as compressed files.
fn oracle_stdout(program: &Path, args: &[&str], files: &[(String, Vec<u8>)]) -> Vec<u8> {
    let dir = std::env::temp_dir().join(format!("armada-busybox-setup-{}", std::process::id()));
    common::prepare_workdir(&dir, files).unwrap();
    let mut cmd = Command::new(common::qemu_bin());
    cmd.arg(program)
        .args(args)
        .current_dir(&dir)
        .env_clear()
        .envs(common::base_env(&dir));
    let out =
        common::run_process(cmd, b"", Duration::from_secs(60)).expect("run qemu for test setup");
    let _ = fs::remove_dir_all(&dir);
    assert_eq!(
        out.status,
        0,
        "setup command {args:?} failed under qemu: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// Input files placed in every case's working directory.
fn input_files(busybox: &Path) -> Vec<(String, Vec<u8>)> {
    let text = common::sample_text(400, 1);
    let mut nums = String::new();
    let r = common::pseudo_random_bytes(600, 5);
    for i in 0..300 {
        let v = i16::from_le_bytes([r[2 * i], r[2 * i + 1]]) as i32;
        if i % 7 == 0 {
            let _ = writeln!(nums, "{}.{}", v / 10, (v % 10).abs());
        } else {
            let _ = writeln!(nums, "{v}");
        }
    }
    let mut csv = String::from("name,qty,price\n");
    const ITEMS: &[&str] = &["apple", "pear", "plum", "fig", "kiwi", "lime"];
    for i in 0..60 {
        let _ = writeln!(
            csv,
            "{},{},{}.{:02}",
            ITEMS[(i * 7) % ITEMS.len()],
            (i * 13) % 29 + 1,
            (i * 37) % 17,
            (i * 53) % 100
        );
    }
    let words: Vec<&str> = std::str::from_utf8(&text)
        .unwrap()
        .split_whitespace()
        .filter(|w| !w.starts_with("line"))
        .collect();
    let mut sorted: Vec<&str> = words
        .iter()
        .copied()
        .filter(|w| w.chars().all(|c| c.is_ascii_alphabetic()))
        .collect();
    sorted.sort();
    // Two sorted, overlapping lists for comm/diff/cmp/paste.
    let a: String = (0..40).map(|k| format!("item{:03}\n", k * 2)).collect();
    let b: String = (0..27).map(|k| format!("item{:03}\n", k * 3)).collect();
    let script_sh = r#"# busybox sh script
greet() { echo "hello, $1 ($#)"; }
total=0
for a in "$@"; do greet "$a"; total=$((total + ${#a})); done
shift
echo "after shift: $# [$*]"
i=0
while [ $i -lt 5 ]; do
  case $((i % 3)) in 0) echo "$i fizz";; 1) echo "$i buzz";; *) echo "$i -";; esac
  i=$((i + 1))
done
echo "total=$total"
exit 3
"#;
    let script_bash = r#"# bash script
set -u
declare -A seen=()
count() { local w; for w in "$@"; do seen[$w]=$(( ${seen[$w]:-0} + 1 )); done; }
words=()
while read -r w1 n w2 rest; do words+=("$w1" "$w2"); (( n > 500 )) && big=$((${big:-0} + 1)); done < text.txt
count "${words[@]}"
for k in alpha zulu mike; do printf '%-6s %3d\n' "$k" "${seen[$k]:-0}"; done
echo "big=${big:-0} words=${#words[@]} args=$# first=${1:-none} rest=${*:2}"
s=""
for ((i = 0; i < 50; i++)); do s+=$(( i % 10 )); done
echo "${s:10:20} ${#s}"
[[ "$s" == *789* ]] && echo "contains 789"
exit 5
"#;
    let mut files: Vec<(String, Vec<u8>)> = vec![
        ("text.txt".into(), text.clone()),
        ("nums.txt".into(), nums.into_bytes()),
        ("csv.txt".into(), csv.into_bytes()),
        (
            "words.txt".into(),
            sorted
                .iter()
                .map(|w| format!("{w}\n"))
                .collect::<String>()
                .into_bytes(),
        ),
        ("a.txt".into(), a.into_bytes()),
        ("b.txt".into(), b.into_bytes()),
        ("data.bin".into(), common::pseudo_random_bytes(64 << 10, 11)),
        ("small.bin".into(), common::pseudo_random_bytes(300, 12)),
        ("script.sh".into(), script_sh.as_bytes().to_vec()),
        ("script.bash".into(), script_bash.as_bytes().to_vec()),
    ];
    let gz = oracle_stdout(busybox, &["gzip", "-c", "text.txt"], &files);
    let bz = oracle_stdout(busybox, &["bzip2", "-c", "text.txt"], &files);
    files.push(("text.txt.gz".into(), gz));
    files.push(("text.txt.bz2".into(), bz));
    files
}

fn applets(busybox: &Path) -> BTreeSet<String> {
    let out = oracle_stdout(busybox, &["--list"], &[]);
    String::from_utf8_lossy(&out)
        .lines()
        .map(|l| l.trim().to_string())
        .collect()
}

struct Spec {
    args: Vec<String>,
    stdin: Vec<u8>,
    status: i32,
    ignore_stderr: bool,
    label: Option<String>,
}

fn spec(args: &[&str]) -> Spec {
    Spec {
        args: args.iter().map(|s| s.to_string()).collect(),
        stdin: Vec::new(),
        status: 0,
        ignore_stderr: false,
        label: None,
    }
}

impl Spec {
    fn status(mut self, s: i32) -> Spec {
        self.status = s;
        self
    }
    fn stdin(mut self, b: impl Into<Vec<u8>>) -> Spec {
        self.stdin = b.into();
        self
    }
    fn ignore_stderr(mut self) -> Spec {
        self.ignore_stderr = true;
        self
    }
    fn label(mut self, l: &str) -> Spec {
        self.label = Some(l.to_string());
        self
    }
}

fn busybox_specs() -> Vec<Spec> {
    let text = common::sample_text(400, 1);
    let b64 = base64(&common::pseudo_random_bytes(1000, 3));
    vec![
        // checksums
        spec(&["sha256sum", "data.bin", "text.txt"]),
        spec(&["md5sum", "data.bin", "text.txt"]),
        spec(&["sha1sum", "text.txt", "small.bin"]),
        spec(&["sha512sum", "small.bin", "data.bin"]),
        spec(&["sha3sum", "small.bin"]),
        spec(&["crc32", "data.bin"]),
        spec(&["sha256sum"]).stdin(text.clone()).label("sha256sum <stdin"),
        // sorting and filtering
        spec(&["sort", "text.txt"]),
        spec(&["sort", "-n", "-r", "nums.txt"]),
        spec(&["sort", "-t", ",", "-k", "3", "-n", "csv.txt"]),
        spec(&["sort", "-u", "-k", "3,3", "text.txt"]),
        spec(&["sort", "-k2,2n", "-k1,1r", "text.txt"]),
        spec(&["uniq", "-c", "words.txt"]),
        spec(&["uniq", "-d", "words.txt"]),
        spec(&["awk", "{s+=$2} END {print s, NR}", "text.txt"]),
        spec(&["awk", "-F,", "NR>1 {t[$1]+=$2*$3} END {for (k in t) printf \"%s %.2f\\n\", k, t[k]}", "csv.txt"]),
        spec(&["awk", "BEGIN {for (i=1;i<=20;i++) printf \"%d %.6f %s %x %d\\n\", i, i*1.5/7 - i*i*i/11, substr(\"abcdefghij\", i%5+1, 3), i*i, int(1e6/i)}"]),
        spec(&["awk", "{ gsub(/a/, \"A\"); n += length($0) } /lima/ { print NR \": \" $0 } END { print n }", "text.txt"]),
        spec(&["sed", "s/a/b/g", "text.txt"]),
        spec(&["sed", "-n", "/^delta/p", "text.txt"]),
        spec(&["sed", "-e", "2,5d", "-e", "s/\\([a-z]*\\) \\([0-9]*\\)/\\2 \\1/", "text.txt"]),
        spec(&["grep", "-c", "alpha", "text.txt"]),
        spec(&["grep", "-n", "-E", "^(echo|golf) [0-9]+ ", "text.txt"]),
        spec(&["grep", "-v", "-i", "A", "text.txt"]),
        spec(&["grep", "-o", "-w", "[a-z]*o", "text.txt"]),
        spec(&["grep", "no-such-string", "text.txt"]).status(1),
        // dumps and encodings
        spec(&["od", "-A", "x", "-t", "x1", "small.bin"]),
        spec(&["od", "-c", "small.bin"]),
        spec(&["od", "-t", "d4", "-N", "64", "data.bin"]),
        spec(&["hexdump", "-C", "small.bin"]),
        spec(&["xxd", "small.bin"]),
        spec(&["base64", "small.bin"]),
        spec(&["base64", "-d"]).stdin(b64).label("base64 -d <stdin"),
        spec(&["strings", "-n", "6", "data.bin"]),
        // compression and archives
        spec(&["gzip", "-c", "data.bin"]),
        spec(&["gzip", "-9", "-c", "text.txt"]),
        spec(&["gunzip", "-c", "text.txt.gz"]),
        spec(&["bzip2", "-c", "text.txt"]),
        spec(&["bunzip2", "-c", "text.txt.bz2"]),
        spec(&["tar", "-cf", "-", "text.txt", "small.bin"]),
        // text utilities
        spec(&["wc", "text.txt", "data.bin"]),
        spec(&["wc", "-l", "-w", "-c"]).stdin(text.clone()).label("wc -l -w -c <stdin"),
        spec(&["tr", "a-z", "A-Z"]).stdin(text.clone()),
        spec(&["tr", "-d", "0-9\\n"]).stdin(text.clone()),
        spec(&["tr", "-s", "a-z", "A-Z"]).stdin(text.clone()),
        spec(&["cut", "-d", ",", "-f", "1,3", "csv.txt"]),
        spec(&["cut", "-c", "2-6,9", "text.txt"]),
        spec(&["head", "-n", "5", "text.txt"]),
        spec(&["tail", "-n", "7", "text.txt"]),
        spec(&["head", "-c", "100", "data.bin"]),
        spec(&["tail", "-c", "77", "data.bin"]),
        spec(&["nl", "text.txt"]),
        spec(&["rev", "text.txt"]),
        spec(&["fold", "-w", "17", "text.txt"]),
        spec(&["tac", "text.txt"]),
        spec(&["paste", "a.txt", "b.txt"]),
        spec(&["comm", "a.txt", "b.txt"]),
        spec(&["diff", "-u", "a.txt", "b.txt"]).status(1),
        spec(&["cmp", "a.txt", "b.txt"]).status(1),
        spec(&["cmp", "text.txt", "text.txt"]),
        spec(&["expand", "-t", "4"]).stdin(&b"a\tbb\tccc\tdddd\te\n\tx\n"[..]),
        // numbers and strings
        spec(&["seq", "1", "100"]),
        spec(&["seq", "-s", ",", "-w", "0", "7", "100"]),
        spec(&["seq", "1.5", "0.25", "3"]),
        spec(&["expr", "12345", "*", "6789"]),
        spec(&["expr", "length", "hello world"]),
        spec(&["expr", "0", "+", "0"]).status(1),
        spec(&["expr", "abc123", ":", "[a-z]*\\([0-9]*\\)"]),
        spec(&["printf", "%05d|%-6s|%x|%.3f|%c|%%|%s\\n", "42", "ab", "255", "3.14159", "zebra", "tail"]),
        spec(&["echo", "-n", "hello", "world"]),
        spec(&["echo", "-e", "a\\tb\\n\\x41\\0101"]),
        spec(&["basename", "/usr/lib/libfoo.so.1", ".1"]),
        spec(&["dirname", "/usr/lib/libfoo.so"]),
        spec(&["factor", "1234567", "999999999989", "600851475143"]),
        spec(&["bc", "-l"]).stdin(&b"scale=30\n4*a(1)\n2^100\nsqrt(2)\n"[..]),
        spec(&["dc", "-e", "2 64 ^ p 7 3 / p"]),
        spec(&["date", "-u", "-d", "@1234567890", "+%Y-%m-%d %H:%M:%S %j %a %s"]),
        spec(&["true"]),
        spec(&["false"]).status(1),
        spec(&["[", "5", "-gt", "3", "]"]),
        spec(&["test", "abc", "=", "abd"]).status(1),
        // files and the file system
        spec(&["stat", "-c", "%n %s %a %Y %F", "text.txt", "data.bin"]),
        spec(&["ls", "-ln", "text.txt", "data.bin"]),
        spec(&["ls", "-1"]),
        spec(&["pwd"]),
        spec(&["realpath", "text.txt"]),
        spec(&["uname", "-s", "-m"]),
        spec(&["cp", "text.txt", "copy.txt"]),
        spec(&["mv", "a.txt", "moved.txt"]),
        spec(&["rm", "b.txt", "small.bin"]),
        spec(&["mkdir", "-p", "x/y/z"]),
        spec(&["ln", "-s", "text.txt", "link.txt"]),
        spec(&["touch", "new-empty-file"]),
        spec(&["dd", "if=data.bin", "of=out.bin", "bs=1000", "count=7", "skip=3"]).ignore_stderr(), // stderr has timing
        spec(&["cat", "missing-file"]).status(1),
        // the shell (builtins only: nothing may fork)
        spec(&["sh", "-c", "i=0; while [ $i -lt 100 ]; do i=$((i+1)); done; echo $i"]),
        spec(&[
            "sh",
            "-c",
            "f() { echo \"arg:$1\"; }; for x in a b c; do f $x; done; set -- p q r; echo $# \"$@\"; x=hello; \
             echo ${x#he} ${x%lo} ${#x} ${y:-dflt}; case $x in h*) echo match;; esac",
        ]),
        spec(&["sh", "-c", "read a b; echo \"[$b][$a]\"; read c; echo \"c=$c\""]).stdin(&b"one two three\nsecond line\n"[..]),
        spec(&["sh", "-c", "echo out; echo err >&2; exit 7"]).status(7),
        spec(&["sh", "script.sh", "arg1", "arg 2", ""]).status(3),
        spec(&["sh", "-c", "n=0; while read -r line; do n=$((n + ${#line})); done < text.txt; echo $n"]),
        spec(&["sh", "-c", "printf '%s-%d\\n' a 1 b 2; echo $((0x10 + 010)) $(( 7 / 2 )) $(( -7 % 3 )) $(( 1 << 40 ))"]),
    ]
}

fn bash_specs() -> Vec<Spec> {
    let text = common::sample_text(400, 1);
    vec![
        spec(&["-c", "s=0; for ((i=1;i<=2000;i++)); do ((s+=i*i)); done; echo $s"]),
        spec(&["-c", "a=(one two three); a+=(four); echo ${#a[@]} ${a[2]} \"${a[@]:1:2}\"; unset 'a[1]'; echo \"${!a[@]}\" \"${a[*]}\""]),
        spec(&["-c", "declare -A m=([x]=1 [y]=2); m[zz]=3; ((m[x]+=10)); for k in x y zz; do echo $k=${m[$k]}; done; echo ${#m[@]}"]),
        spec(&[
            "-c",
            "[[ abc123def =~ ([a-z]+)([0-9]+) ]] && echo \"${BASH_REMATCH[0]} ${BASH_REMATCH[1]} ${BASH_REMATCH[2]}\"; \
             [[ x.tar.gz == *.gz ]] && echo glob; [[ 2024-01-31 =~ ^([0-9]{4})-([0-9]{2}) ]] && echo ${BASH_REMATCH[2]}",
        ]),
        spec(&["-c", "x=banana; echo ${x//a/b} ${x/a/o} ${x^^} ${x:2:3} ${#x} ${x%%n*} ${x##*n} ${x@Q} ${x@U}"]),
        spec(&["-c", "printf -v v '%05.1f|%x|%s|%q|%(%Y)T' 3.14159 255 hi 'a b' 0; echo \"$v\""]),
        spec(&[
            "-c",
            "fact() { if (( $1 <= 1 )); then r=1; else fact $(( $1 - 1 )); r=$(( r * $1 )); fi; }; fact 20; echo $r; \
             fib() { local n=$1; if (( n < 2 )); then ret=$n; return; fi; fib $((n-1)); local a=$ret; fib $((n-2)); ret=$((a+ret)); }; \
             fib 16; echo $ret",
        ]),
        spec(&["-c", "read -r a b <<< 'hello world'; echo \"$b $a\"; c=0; while read -r l; do ((c++)); done <<< $'x\\ny\\nz'; echo $c"]),
        spec(&["-c", "while IFS=, read -r a b c; do echo \"$c:$a\"; done < csv.txt"]),
        spec(&["-c", "echo before; exit 42"]).status(42),
        spec(&["-c", "trap 'echo bye' EXIT; echo hi"]),
        spec(&["-c", "echo {a..e} {1..10..3} x{1,2}y {z..w}"]),
        spec(&["-c", "echo $(( 2**62 )) $(( -7 / 2 )) $(( -7 % 2 )) $(( 1 << 63 )) $(( 0x7fffffffffffffff + 1 )) $(( 10#0123 )) $(( 16#ff ))"]),
        spec(&["-c", "mapfile -t lines < text.txt; echo ${#lines[@]} \"${lines[5]}\" \"${lines[-1]}\""]),
        spec(&["-c", "RANDOM=42; echo $RANDOM $RANDOM $RANDOM"]),
        spec(&["-c", "shopt -s extglob; x=aaabbbccc; echo ${x//+(a)/X} ${x/#a*b/Y}; y='  padded  '; echo \"[${y##+( )}]\""]),
        spec(&["-c", "declare -i n=5; n+=3*2; declare -a arr=(3 1 2); declare -p n arr; printf '%s\\n' \"${arr[@]}\""]),
        spec(&["-c", "n=0; while read -r line; do n=$((n+${#line})); done; echo $n"]).stdin(text),
        spec(&["script.bash", "x", "y z"]).status(5),
        spec(&["-c", "echo ${BASH_VERSINFO[0]}.${BASH_VERSINFO[1]}"]),
        spec(&["-c", "x=5; let 'y = x * 3 + 1'; echo $y; (( y > 10 )) && echo big; [[ $y -eq 16 ]]; echo $?"]),
        spec(&["-c", "str='The Quick Brown Fox'; echo ${str,,} ${str~~} ${#str}; arr=($str); echo ${arr[@]: -2}; IFS=, ; echo \"${arr[*]}\""]),
        spec(&["-c", "for i in {1..5}; do case $i in 1|2) echo low;; 3) echo mid;; *) echo high;; esac; done"]),
        spec(&["-c", "echo \"$0\" \"$#\" \"$@\"", "name0", "a", "b c"]),
        spec(&["-c", "x=$'tab\\there'; echo \"$x\"; printf '%d %o %e\\n' \"'A\" 64 12345.678"]),
        spec(&["-c", "cd /; pwd; cd - >/dev/null; echo back; echo ${PWD: -4}"]),
        spec(&["-c", "echo before; echo ${undefined_var:?custom message}; echo after"]).status(127),
        spec(&["-c", "type echo printf cd; kill -l 11; set -- a b c; shift 2; echo $@"]),
    ]
}

fn label_of(args: &[String]) -> String {
    let s = args.join(" ");
    if s.chars().count() > 60 {
        format!("{}…", s.chars().take(60).collect::<String>())
    } else {
        s
    }
}

#[test]
fn busybox_and_bash_match_qemu() {
    let tools: Vec<OsString> = vec![common::qemu_bin(), "dpkg-deb".into()];
    if !common::require_tools(TEST, &tools) {
        return;
    }
    common::require_armada(TEST);
    let (busybox, bash) = match guest_tools() {
        Ok(t) => t,
        Err(e) => {
            common::unavailable(TEST, &e);
            return;
        }
    };
    let files = input_files(&busybox);
    let available = applets(&busybox);
    let mut cases = Vec::new();
    let mut seen = BTreeSet::new();
    for s in busybox_specs() {
        let applet = s.args[0].clone();
        if !available.contains(&applet) {
            common::loud(&format!(
                "{TEST}: note: this busybox has no `{applet}` applet; case skipped"
            ));
            continue;
        }
        let name = format!(
            "busybox {}",
            s.label.clone().unwrap_or_else(|| label_of(&s.args))
        );
        assert!(seen.insert(name.clone()), "duplicate case {name}");
        let mut c = Case::new(name, busybox.clone())
            .args(s.args)
            .stdin(s.stdin)
            .files(&files)
            .expect_status(s.status);
        if s.ignore_stderr {
            c = c.ignore_stderr();
        }
        cases.push(c);
    }
    for s in bash_specs() {
        let name = format!(
            "bash {}",
            s.label.clone().unwrap_or_else(|| label_of(&s.args))
        );
        assert!(seen.insert(name.clone()), "duplicate case {name}");
        let mut c = Case::new(name, bash.clone())
            .args(s.args)
            .stdin(s.stdin)
            .files(&files)
            .expect_status(s.status);
        if s.ignore_stderr {
            c = c.ignore_stderr();
        }
        cases.push(c);
    }
    common::run_suite("busybox-bash", cases);
}
