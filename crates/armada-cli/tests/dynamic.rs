//! Dynamically linked programs: differential tests of `armada run -L SYSROOT PROG ARGS`
//! against `qemu-aarch64 -L SYSROOT PROG ARGS` (same stdout, stderr, exit status and files
//! left in the working directory; see tests/common/mod.rs), plus checks of armada's own
//! errors for programs whose interpreter is missing or not AArch64.
//!
//! Two sysroots:
//! - `target/sysroot` (or `$ARMADA_TEST_SYSROOT`), Debian arm64 packages unpacked by
//!   `scripts/sysroot.sh`: coreutils, grep, sed, gawk, sqlite3, lua5.4, perl, python3.
//!   Without it the tests that need it skip (fail under CI / ARMADA_TEST_STRICT).
//! - `/usr/aarch64-linux-gnu`, Debian's cross sysroot (libc6-arm64-cross, installed with
//!   gcc-aarch64-linux-gnu): our own C and C++ programs of tests/guest/dynamic/, built by
//!   `tests/guest/build-dynamic.sh target/guest-dynamic` (run here once per test process).
//!
//! Filter cases with ARMADA_TEST_FILTER=python,sqlite etc. as in the other suites.

mod common;

use common::Case;
use std::ffi::OsString;
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;

/// Debian's cross sysroot for the programs we build ourselves.
const CROSS_SYSROOT: &str = "/usr/aarch64-linux-gnu";
/// The interpreter badinterp-missing asks for (tests/guest/build-dynamic.sh).
const MISSING_INTERP: &str = "/nonexistent/armada/ld-linux-aarch64.so.1";
/// The interpreter badinterp-x86 asks for: a host program, x86-64 on an x86-64 host.
const X86_INTERP: &str = "/bin/true";

// ---------------------------------------------------------------------------------------
// What the tests need

/// Builds tests/guest/dynamic/ once per test process into target/guest-dynamic.
fn dynamic_programs_dir() -> Result<PathBuf, String> {
    static BUILT: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            let root = common::workspace_root();
            let script = root.join("tests/guest/build-dynamic.sh");
            let out = Command::new("bash")
                .arg(&script)
                .arg("target/guest-dynamic")
                .current_dir(&root)
                .output()
                .map_err(|e| format!("could not run {}: {e}", script.display()))?;
            if !out.status.success() {
                return Err(format!(
                    "{} target/guest-dynamic failed ({}):\n{}{}",
                    script.display(),
                    out.status,
                    String::from_utf8_lossy(&out.stdout),
                    String::from_utf8_lossy(&out.stderr)
                ));
            }
            Ok(root.join("target/guest-dynamic"))
        })
        .clone()
}

/// qemu, the cross compilers and the cross sysroot; then the built programs.
fn cross_setup(test: &str) -> Option<PathBuf> {
    let tools: Vec<OsString> = vec![
        common::qemu_bin(),
        "aarch64-linux-gnu-gcc".into(),
        "aarch64-linux-gnu-g++".into(),
    ];
    if !common::require_tools(test, &tools) {
        return None;
    }
    common::require_armada(test);
    if !Path::new(CROSS_SYSROOT)
        .join("lib/ld-linux-aarch64.so.1")
        .exists()
    {
        common::unavailable(
            test,
            &format!("{CROSS_SYSROOT}/lib/ld-linux-aarch64.so.1 is missing (apt-get install libc6-arm64-cross)"),
        );
        return None;
    }
    match dynamic_programs_dir() {
        Ok(d) => Some(d),
        Err(e) => {
            // The compilers are there, so a failed build is a real failure.
            panic!("{test}: {e}");
        }
    }
}

// ---------------------------------------------------------------------------------------
// Debian's programs through target/sysroot

fn input_files() -> Vec<(String, Vec<u8>)> {
    let text = common::sample_text(200, 7);
    let mut nums = String::new();
    let r = common::pseudo_random_bytes(400, 11);
    for i in 0..150 {
        let v = i16::from_le_bytes([r[2 * i], r[2 * i + 1]]) as i32;
        let _ = writeln!(nums, "{v}");
    }
    let mut csv = String::new();
    const NAMES: &[&str] = &["alice", "bob", "carol", "dave", "eve", "frank", "grace"];
    const DEPTS: &[&str] = &["sales", "dev", "ops"];
    for i in 0..21 {
        let _ = writeln!(
            csv,
            "{},{},{}",
            NAMES[i % NAMES.len()],
            DEPTS[(i * 5) % DEPTS.len()],
            (i * 137) % 500 + 100
        );
    }
    let config =
        "# a config file\nname = armada\nmode=dynamic\n\n# comment\nlevel = 3\npath = /usr/lib/x\n";
    vec![
        ("text.txt".into(), text),
        ("numbers.txt".into(), nums.into_bytes()),
        ("emp.csv".into(), csv.into_bytes()),
        ("config.ini".into(), config.as_bytes().to_vec()),
        // a directory with fixed names for ls
        ("dir/alpha.txt".into(), b"alpha\n".to_vec()),
        ("dir/Beta.txt".into(), b"beta beta\n".to_vec()),
        (
            "dir/gamma file.txt".into(),
            b"gamma\ngamma\ngamma\n".to_vec(),
        ),
        ("dir/.hidden".into(), b"hidden\n".to_vec()),
        (
            "dir/sub/delta.c".into(),
            b"int main(void) { return 0; }\n".to_vec(),
        ),
        ("dir/sub/epsilon".into(), vec![0u8; 5000]),
    ]
}

const GAWK_PROGRAM: &str = r#"BEGIN { FS = ","; PROCINFO["sorted_in"] = "@ind_str_asc" }
{ total[$2] += $3; count[$2]++
  names[$2] = names[$2] (names[$2] ? "+" : "") toupper(substr($1, 1, 1)) substr($1, 2)
  if ($3 > max) { max = $3; who = $1 } }
END {
  for (d in total) printf "%-6s n=%d sum=%5d avg=%8.3f %s\n", d, count[d], total[d], total[d] / count[d], names[d]
  print "max", who, max, NR, NF
  n = split("z y x w", parts, " "); asort(parts); for (i = 1; i <= n; i++) s = s parts[i]; print s, length(s), index(s, "x")
  printf "%c%c %o %x %e %5.1f%%\n", 65, "bcd", 64, 255, 12345.678, 99.44
  str = "foo=1;bar=22;baz=333"
  while (match(str, /[a-z]+=[0-9]+/)) { kv = substr(str, RSTART, RLENGTH); sub(/=/, " -> ", kv); print kv; str = substr(str, RSTART + RLENGTH) }
  print 2^53 + 1, int(-3.7), sqrt(2), exp(1), atan2(0, -1), strtonum("0x1A"), 7 % 3, 2 ** 0.5
  x = "Hello"; gsub(/l/, "L", x); print x, tolower(x), gensub(/(H)(e)/, "\\2\\1", "g", x)
}"#;

const SQL_SCRIPT: &str = r#"CREATE TABLE t(id INTEGER PRIMARY KEY, name TEXT, grp TEXT, score REAL);
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 500)
INSERT INTO t(name, grp, score) SELECT 'item' || i, char(65 + i % 5), (i * 37 % 101) / 3.0 FROM n;
CREATE INDEX t_grp ON t(grp);
SELECT count(*), sum(score), min(name), max(length(name)) FROM t;
SELECT grp, count(*), printf('%.4f', avg(score)), group_concat(id % 7, '') FROM (SELECT * FROM t WHERE id <= 30) GROUP BY grp ORDER BY grp;
SELECT name, score, rank() OVER (PARTITION BY grp ORDER BY score DESC, id) AS r FROM t WHERE id % 45 = 0 ORDER BY grp, r;
SELECT json_object('n', 3, 'list', json_array(1, 2.5, 'x')), json_extract('{"a":{"b":[10,20]}}', '$.a.b[1]');
SELECT upper('dynamic'), substr('sqlite3', 2, 3), replace('a-b-c', '-', '+'), hex(zeroblob(3)), typeof(1.0), 7 / 2, 7 % 3, round(2.675, 2);
SELECT date('2024-01-31', '+1 month'), strftime('%Y-%j %H:%M', '2001-09-09 01:46:40'), julianday('2000-01-01');
BEGIN;
UPDATE t SET score = score * 2 WHERE grp = 'A';
DELETE FROM t WHERE id > 400;
COMMIT;
SELECT grp, total(score) FROM t GROUP BY grp HAVING count(*) > 10 ORDER BY 2 DESC;
.mode csv
SELECT id, name FROM t WHERE id IN (1, 2, 3);
.mode column
.headers on
SELECT id, grp, score FROM t LIMIT 3;
SELECT * FROM no_such_table;
"#;

const LUA_PROGRAM: &str = r#"local t = {}
for i = 1, 10 do t[#t + 1] = i * i end
print(table.concat(t, ","), #t, 7 // 2, 7 / 2, 2^10, 10 % 3, -7 // 2, math.maxinteger, 1e15, 0.1 + 0.2)
local words = {}
for w in ("the quick brown fox jumps over the lazy dog"):gmatch("%a+") do words[#words + 1] = w end
table.sort(words)
print(table.concat(words, " "), (("hello world"):gsub("o", "0")), ("%5.2f|%-5s|%x|%q"):format(math.pi, "ab", 255, "q\n"))
local function fib(n) if n < 2 then return n end return fib(n - 1) + fib(n - 2) end
print(fib(20), string.rep("ab", 3, "-"), ("Lua"):upper(), tostring(nil), math.type(1), math.type(1.0), math.floor(-3.5), math.huge)
local co = coroutine.create(function(a) local b = coroutine.yield(a + 1); return b * 2 end)
print(coroutine.resume(co, 10)); print(coroutine.resume(co, 21)); print(coroutine.status(co))
local ok, err = pcall(function() error({code = 7}) end); print(ok, type(err), err.code)
local ok2, err2 = pcall(function() local x = nil; return x.field end); print(ok2, err2)
local mt = setmetatable({}, {__index = function(_, k) return k .. "!" end}); print(mt.hi, mt[1])
print(string.pack("<i4", 258):byte(1, -1)); print(utf8.char(72, 228, 8364), utf8.len("h\u{e4}\u{20ac}"))
local keys = {}; for k in pairs({zeta = 1, alpha = 2, mid = 3}) do keys[#keys + 1] = k end; table.sort(keys); print(table.concat(keys, " "))
io.stderr:write("lua: to stderr\n")
os.exit(5)"#;

const PERL_PROGRAM: &str = r#"use strict; use warnings;
my %h = (apple => 3, banana => 7, cherry => 5);
$h{date} = $h{apple} * 2;
for my $k (sort keys %h) { printf "%-8s %3d\n", $k, $h{$k}; }
my @sorted = sort { $h{$b} <=> $h{$a} or $a cmp $b } keys %h;
print "by value: @sorted\n";
my $s = "The year 1999 and 2024, then 42";
my @nums = $s =~ /(\d+)/g;
(my $t = $s) =~ s/(\d+)/<$1>/g;
my $sum = 0; $sum += $_ for @nums;
print "nums=@nums sum=$sum\n$t\n";
print join(",", map { sprintf "%05.1f|%x|%e|%-4s|%+d", $_ / 7, $_ * 51, $_ ** 3, "x" x $_, -$_ } 1 .. 4), "\n";
my @words = split /\s*,\s*/, "a , bb,ccc ,dddd";
print scalar(@words), " words, lengths: @{[ map { length } @words ]}\n";
print "uc=", uc("mixed Case"), " lcfirst=", lcfirst("ABC"), " rev=", scalar reverse("hello"), "\n";
my $big = 1; $big *= $_ for 1 .. 20;
print "20!=$big 2**53=", 2**53, " int(7.9)=", int(7.9), " 10/3=", 10/3, " 0x1f=", hex("1f"), " oct=", oct("755"), "\n";
my %count; $count{$_}++ for split //, "mississippi";
print join(" ", map {"$_=$count{$_}"} sort keys %count), "\n";
my %nested = (list => [1, 2, 3], map => { x => 1, y => 2 });
print "nested: @{$nested{list}} ", join(",", map { "$_:$nested{map}{$_}" } sort keys %{$nested{map}}), "\n";
if ("2024-02-29T12:30:05" =~ /^(?<y>\d{4})-(?<m>\d\d)-(?<d>\d\d)T(\d+):(\d+)/) { print "date: $+{y}/$+{m}/$+{d} $4h$5\n"; }
my $text = "one two  three\tfour"; my @f = split ' ', $text; print scalar(@f), " fields, tr count: ", ($text =~ tr/o//), "\n";
print "sprintf: ", sprintf("%s|%5s|%-5s|%05d|%.3g|%b", "a", "b", "c", 42, 1234.5678, 10), "\n";
warn "perl: a warning\n";
exit 3;"#;

const PYTHON_PROGRAM: &str = r#"import sys, os
d = {"b": 2, "a": 1, "c": [1, 2, 3]}
d["z"] = {k: v * 2 for k, v in d.items() if isinstance(v, int)}
print(sorted(d), d["z"], len(d))
print(2**200, 10**30 // 7, -7 // 2, -7 % 3, divmod(2**65, 12345))
print(f"{3.14159:.3f} {1e100!r} {0.1+0.2!r} {1/3} {2.5:e} {255:#x} {-42:+08d}")
print(" ".join(w.capitalize() for w in "the quick brown fox".split()), "abc".encode().hex(), bytes(range(5)))
print(sys.version_info[:2], sys.byteorder, sys.maxsize, os.sep, sys.platform, os.name)
def fib(n): return n if n < 2 else fib(n-1) + fib(n-2)
print([fib(i) for i in range(15)], sum(x*x for x in range(1000)))
try:
    {}["missing"]
except KeyError as e:
    print("KeyError", e)
class P:
    def __init__(s, x): s.x = x
    def __repr__(s): return f"P({s.x})"
print(sorted([P(3), P(1), P(2)], key=lambda p: p.x), os.environ.get("HOME") == os.getcwd(), "getpid" in dir(os))
print(list(zip("abc", range(3))), list(map(str.upper, ["x", "y"])), "%5.2f|%-4s|%d" % (2.71828, "ab", 7))
with open("text.txt") as f:
    lines = f.readlines()
print(len(lines), lines[0].split()[0], max(len(l) for l in lines), sorted(os.listdir("dir")))
with open("out.txt", "w") as f:
    f.write("written by python\n")
print(os.path.getsize("out.txt"), os.path.exists("nope"), os.path.join("a", "b"), os.path.splitext("x.tar.gz"))
sys.stderr.write("python: to stderr\n")
sys.exit(4)"#;

const PYTHON_STDLIB_PROGRAM: &str = r#"import re, collections, struct, math, zlib, hashlib, datetime, random, itertools, functools, heapq, base64
words = re.findall(r"[a-z]+", "The rain in Spain stays mainly in the plain, in 2024!".lower())
print(collections.Counter(words).most_common(3), re.sub(r"(\w+)ain", r"<\1>", "rain Spain plain"))
print(struct.pack("<IhQd", 1, -2, 3, 1.5).hex(), struct.unpack(">HI", b"\x01\x02\x03\x04\x05\x06"))
print(math.factorial(30), math.gcd(2**40, 6**20), round(math.pi, 10), math.isqrt(10**20 + 1), math.lgamma(10.5))
data = b"armada " * 1000
print(zlib.crc32(data), len(zlib.compress(data, 9)), zlib.adler32(data), hashlib.sha256(data).hexdigest())
print(hashlib.md5(b"abc").hexdigest(), hashlib.sha1(b"abc").hexdigest(), base64.b64encode(b"dynamic!").decode())
print(datetime.datetime(2024, 2, 29, 12, 30) + datetime.timedelta(days=400), datetime.date(2000, 1, 1).isoformat())
r = random.Random(12345)
print([r.randint(1, 100) for _ in range(8)], r.random())
print(list(itertools.permutations("abc", 2))[:4], functools.reduce(lambda a, b: a * b, range(1, 20)), heapq.nsmallest(3, [5, 1, 8, 3, 9, 2]))
od = collections.OrderedDict(); od["x"] = 1; od["y"] = 2; od.move_to_end("x"); print(list(od), collections.deque(range(5), maxlen=3))"#;

/// One case of a Debian program from the sysroot.
fn sys(sysroot: &Path, name: &str, prog: &str, args: &[&str]) -> Case {
    Case::new(name, sysroot.join("usr/bin").join(prog))
        .args(args.iter().copied())
        .sysroot(sysroot)
        .files(&input_files())
        // Python and Perl randomise string hashing per process; pin them (outputs here
        // do not depend on it, but a reproducible run is easier to debug).
        .env("PYTHONHASHSEED", "0")
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .env("PERL_HASH_SEED", "0")
        .expect_status(0)
}

fn sysroot_cases(s: &Path) -> Vec<Case> {
    let text = common::sample_text(120, 3);
    vec![
        // coreutils
        sys(s, "ls dir", "ls", &["dir"]),
        sys(s, "ls -A -R -F dir", "ls", &["-A", "-R", "-F", "dir"]),
        sys(s, "ls -ln files", "ls", &["-ln", "--time-style=long-iso", "dir/alpha.txt", "dir/Beta.txt", "dir/sub/epsilon"]),
        sys(s, "ls missing", "ls", &["dir/missing"]).expect_status(2),
        sys(s, "sort text", "sort", &["text.txt"]),
        sys(s, "sort -n -r numbers", "sort", &["-n", "-r", "numbers.txt"]),
        sys(s, "sort -t, -k3,3n -k1,1 csv", "sort", &["-t,", "-k3,3n", "-k1,1", "emp.csv"]),
        sys(s, "sort -u stdin", "sort", &["-u"]).stdin(&b"pear\napple\npear\nfig\napple\n"[..]),
        sys(s, "wc", "wc", &["text.txt", "numbers.txt", "emp.csv"]),
        sys(s, "wc -l stdin", "wc", &["-l"]).stdin(text.clone()),
        sys(s, "sha256sum", "sha256sum", &["text.txt", "numbers.txt", "dir/sub/epsilon"]),
        sys(s, "md5sum stdin", "md5sum", &[]).stdin(text.clone()),
        sys(s, "seq 1 7 100", "seq", &["1", "7", "100"]),
        sys(s, "seq -w -s", "seq", &["-w", "-s", ",", "8", "12"]),
        sys(s, "seq -f", "seq", &["-f", "%.3f", "0", "0.125", "1"]),
        sys(s, "tr a-z A-Z", "tr", &["a-z", "A-Z"]).stdin(text.clone()),
        sys(s, "tr -ds", "tr", &["-ds", "0-9", " "]).stdin(&b"a  1b   22c    333d\n"[..]),
        sys(s, "cut -d, -f1,3", "cut", &["-d,", "-f1,3", "emp.csv"]),
        sys(s, "cut -c", "cut", &["-c", "2-5,8", "text.txt"]),
        sys(s, "printf", "printf", &["%5.2f|%-6s|%x|%o|%e|%s|%c|%%|%05d\\n", "3.14159", "ab", "255", "8", "12345.678", "x y", "zed", "42"]),
        sys(s, "date -d @0 -u", "date", &["-d", "@0", "-u"]),
        sys(s, "date -u -d @1234567890 +fmt", "date", &["-u", "-d", "@1234567890", "+%Y-%m-%d %H:%M:%S %A %j %s %Z"]),
        sys(s, "basename", "basename", &["/usr/lib/libfoo.so.1", ".1"]),
        sys(s, "basename -a", "basename", &["-a", "/a/b/c.txt", "d/e/", "f"]),
        sys(s, "dirname", "dirname", &["/usr/lib/libfoo.so", "relative/x", "y"]),
        sys(s, "cat -n", "cat", &["-n", "config.ini", "dir/alpha.txt"]),
        sys(s, "cat missing", "cat", &["missing.txt"]).expect_status(1),
        sys(s, "head tail", "head", &["-n", "3", "text.txt", "emp.csv"]),
        sys(s, "tail -n", "tail", &["-n", "4", "text.txt"]),
        sys(s, "uniq -c", "uniq", &["-c"]).stdin(&b"a\na\nb\nc\nc\nc\na\n"[..]),
        sys(s, "od -A x -t x1z", "od", &["-A", "x", "-t", "x1z", "config.ini"]),
        sys(s, "base64", "base64", &["config.ini"]),
        sys(s, "factor", "factor", &["1234567", "999999999989", "600851475143", "18446744073709551615"]),
        sys(s, "expr", "expr", &["12345", "*", "6789"]),
        sys(s, "numfmt", "numfmt", &["--to=iec", "1024", "123456789", "5"]),
        sys(s, "stat -c", "stat", &["-c", "%n %s %a %F %Y", "config.ini", "dir/sub/epsilon", "dir"]),
        sys(s, "cp", "cp", &["text.txt", "copy.txt"]),
        sys(s, "mkdir -p", "mkdir", &["-p", "x/y/z"]),
        sys(s, "mv", "mv", &["config.ini", "dir/moved.ini"]),
        sys(s, "true", "true", &[]),
        sys(s, "false", "false", &[]).expect_status(1),
        // grep
        sys(s, "grep -E", "grep", &["-E", "^(alpha|echo) [0-9]{2,3} ", "text.txt"]),
        sys(s, "grep -c", "grep", &["-c", "kilo", "text.txt"]),
        sys(s, "grep -n -i -o", "grep", &["-n", "-i", "-o", "-E", "LINE1[0-9]+", "text.txt"]),
        sys(s, "grep -v -w", "grep", &["-v", "-w", "-e", "dev", "-e", "ops", "emp.csv"]),
        sys(s, "grep -r -l", "grep", &["-r", "-l", "gamma", "dir"]),
        sys(s, "grep -c no match", "grep", &["-c", "no such thing", "text.txt"]).expect_status(1),
        sys(s, "grep -F -x", "grep", &["-F", "-x", "name = armada", "config.ini"]),
        // sed
        sys(s, "sed s///g", "sed", &["s/a/A/g; s/[0-9]\\+/<&>/2", "text.txt"]),
        sys(s, "sed -E swap", "sed", &["-E", "s/^([a-z]+) ([0-9]+) ([a-z]+)/\\3 \\2 \\1/", "text.txt"]),
        sys(s, "sed -n range", "sed", &["-n", "/^name/,/^level/p; $=", "config.ini"]),
        sys(s, "sed delete comments", "sed", &["-e", "/^#/d", "-e", "/^$/d", "-e", "s/ *= */=/", "config.ini"]),
        sys(s, "sed -i", "sed", &["-i.bak", "-e", "s/dynamic/DYNAMIC/", "config.ini"]),
        sys(s, "sed y and hold", "sed", &["-n", "y/abc/xyz/; h; G; 1,3p"]).stdin(&b"abc\ncab\nbca\nzzz\n"[..]),
        // gawk
        sys(s, "gawk program", "gawk", &[GAWK_PROGRAM, "emp.csv"]),
        sys(s, "gawk -v printf", "gawk", &["-v", "n=5", "BEGIN { for (i = 1; i <= n; i++) printf \"%d^2=%d%s\", i, i * i, (i < n ? \", \" : \"\\n\"); exit 3 }"]).expect_status(3),
        sys(s, "gawk fields stdin", "gawk", &["{ s += $2; w[$1]++ } END { PROCINFO[\"sorted_in\"] = \"@val_num_desc\"; for (k in w) { print k, w[k]; if (++c == 3) break }; print s, NR }"]).stdin(text.clone()),
        // sqlite3, in memory, SQL on stdin
        sys(s, "sqlite3 script", "sqlite3", &[]).stdin(SQL_SCRIPT).expect_status(1),
        sys(s, "sqlite3 -batch :memory: cmd", "sqlite3", &["-batch", ":memory:", "SELECT sqlite_version() > '3', 6 * 7, printf('%08.3f', 3.14159);"]),
        // lua
        sys(s, "lua5.4 -e", "lua5.4", &["-e", LUA_PROGRAM]).expect_status(5),
        sys(s, "lua5.4 -e error", "lua5.4", &["-e", "local t = nil; print(t.x)"]).expect_status(1),
        // perl
        sys(s, "perl -e", "perl", &["-e", PERL_PROGRAM]).expect_status(3),
        sys(s, "perl -ne", "perl", &["-ne", "print if /^(alpha|kilo)/; END { print \"$.\\n\" }", "text.txt"]),
        sys(s, "perl -e die", "perl", &["-e", "die qq(perl: dying\\n)"]).expect_status(255),
        // python3
        sys(s, "python3 -c", "python3", &["-c", PYTHON_PROGRAM]).expect_status(4),
        sys(s, "python3 -c stdlib", "python3", &["-c", PYTHON_STDLIB_PROGRAM]),
        sys(s, "python3 -S -c pass", "python3", &["-S", "-c", "pass"]),
        sys(s, "python3 -c traceback", "python3", &["-c", "def f(x):\n    return 1 / x\nf(0)"]).expect_status(1),
        sys(s, "python3 stdin", "python3", &["-"]).stdin(&b"import sys\nprint(sum(int(x) for x in sys.argv[1:] or [1, 2, 3]))\n"[..]),
    ]
}

#[test]
fn sysroot_programs_match_qemu() {
    const TEST: &str = "sysroot_programs_match_qemu";
    if !common::require_tools(TEST, &[common::qemu_bin()]) {
        return;
    }
    common::require_armada(TEST);
    let sysroot =
        match common::debian_sysroot(&["usr/lib/ld-linux-aarch64.so.1", "usr/bin/python3"]) {
            Ok(d) => d,
            Err(e) => {
                common::unavailable(TEST, &e);
                return;
            }
        };
    common::run_suite("dynamic-sysroot", sysroot_cases(&sysroot));
}

// ---------------------------------------------------------------------------------------
// Our own dynamically linked programs through /usr/aarch64-linux-gnu

fn cross(dir: &Path, name: &str, prog: &str) -> Case {
    Case::new(name, dir.join(prog))
        .sysroot(CROSS_SYSROOT)
        .expect_status(0)
}

#[test]
fn cross_sysroot_programs_match_qemu() {
    const TEST: &str = "cross_sysroot_programs_match_qemu";
    let Some(d) = cross_setup(TEST) else {
        return;
    };
    let cases = vec![
        cross(&d, "argv_env", "argv_env")
            .args(["one", "two words", "", "--flag=x"])
            .env("ARMADA_DYN_EXTRA", "extra value")
            .expect_status(5),
        // options of armada's and qemu's own after the program belong to the program
        cross(&d, "argv_env options after the program", "argv_env")
            .args(["-E", "X=1", "-L", "/x", "--stats", "--", "-U", "end"])
            .expect_status(9),
        cross(&d, "argv_env-nopie", "argv_env-nopie")
            .args(["a", "b"])
            .expect_status(3),
        // QEMU_LD_PREFIX instead of -L
        Case::new("argv_env QEMU_LD_PREFIX", d.join("argv_env"))
            .arg("via-env")
            .env("QEMU_LD_PREFIX", CROSS_SYSROOT)
            .expect_status(2),
        cross(&d, "libm_dlopen", "libm_dlopen"),
        cross(&d, "cxx_features", "cxx_features"),
        cross(&d, "cxx_features uncaught", "cxx_features")
            .arg("throw")
            .expect_status(134), // std::terminate -> abort: SIGABRT
        cross(&d, "use_armadadyn rpath $ORIGIN", "use_armadadyn").arg("x"),
        // the library is next to the program, but the rpath points elsewhere: ld.so's error
        cross(
            &d,
            "use_armadadyn-optrpath no lib",
            "use_armadadyn-optrpath",
        )
        .expect_status(127),
    ];
    common::run_suite("dynamic-cross", cases);
}

// ---------------------------------------------------------------------------------------
// Libraries found through a sysroot of our own; truncated libraries

/// A sysroot in a temporary directory: lib -> /usr/aarch64-linux-gnu/lib (glibc and ld.so)
/// and opt/armada-dyn/libarmadadyn.so, the first `keep` bytes of the real library (all of
/// it for None). Programs linked with -rpath /opt/armada-dyn find it there.
struct TempSysroot(PathBuf);

impl TempSysroot {
    fn new(tag: &str, lib: &Path, keep: Option<usize>) -> TempSysroot {
        let dir = std::env::temp_dir().join(format!("armada-dynamic-{}-{tag}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(dir.join("opt/armada-dyn")).unwrap();
        std::os::unix::fs::symlink(Path::new(CROSS_SYSROOT).join("lib"), dir.join("lib")).unwrap();
        let mut bytes = fs::read(lib).unwrap_or_else(|e| panic!("{}: {e}", lib.display()));
        if let Some(n) = keep {
            assert!(
                n < bytes.len(),
                "{} is only {} bytes",
                lib.display(),
                bytes.len()
            );
            bytes.truncate(n);
        }
        fs::write(dir.join("opt/armada-dyn/libarmadadyn.so"), bytes).unwrap();
        TempSysroot(dir)
    }
}

impl Drop for TempSysroot {
    fn drop(&mut self) {
        if std::env::var_os("ARMADA_TEST_KEEP").is_none() {
            let _ = fs::remove_dir_all(&self.0);
        }
    }
}

#[test]
fn library_in_sysroot_and_truncated_libraries_match_qemu() {
    const TEST: &str = "library_in_sysroot_and_truncated_libraries_match_qemu";
    let Some(d) = cross_setup(TEST) else {
        return;
    };
    let lib = d.join("libarmadadyn.so");
    let full = TempSysroot::new("full", &lib, None);
    // Shorter than an ELF header: ld.so says "file too short" and exits 127.
    let t32 = TempSysroot::new("t32", &lib, Some(32));
    // The ELF header but not all program headers: "cannot read file data", 127.
    let t300 = TempSysroot::new("t300", &lib, Some(300));
    let prog = d.join("use_armadadyn-optrpath");
    let cases = vec![
        Case::new("libarmadadyn.so found under -L", &prog)
            .sysroot(&full.0)
            .expect_status(0),
        Case::new("libarmadadyn.so truncated to 32 bytes", &prog)
            .sysroot(&t32.0)
            .expect_status(127),
        Case::new("libarmadadyn.so truncated to 300 bytes", &prog)
            .sysroot(&t300.0)
            .expect_status(127),
    ];
    common::run_suite("dynamic-libs", cases);
}

/// A library cut after its program headers: ld.so maps segments that reach past the end of
/// the file and touches them, which is SIGBUS on Linux and under qemu (status 135).
#[test]
fn truncated_library_past_headers_is_sigbus_as_under_qemu() {
    const TEST: &str = "truncated_library_past_headers_is_sigbus_as_under_qemu";
    let Some(d) = cross_setup(TEST) else {
        return;
    };
    let t4096 = TempSysroot::new("t4096", &d.join("libarmadadyn.so"), Some(4096));
    let cases = vec![Case::new(
        "libarmadadyn.so truncated to 4096 bytes",
        d.join("use_armadadyn-optrpath"),
    )
    .sysroot(&t4096.0)
    .expect_status(128 + 7)];
    common::run_suite("dynamic-sigbus", cases);
}

// ---------------------------------------------------------------------------------------
// Bad interpreters: armada's own errors (qemu's are different and not compared)

struct ArmadaRun {
    status: i32,
    stderr: String,
    stdout: String,
}

fn armada_run(args: &[&std::ffi::OsStr]) -> ArmadaRun {
    let mut cmd = Command::new(common::armada_bin());
    cmd.arg("run").args(args).env_remove("QEMU_LD_PREFIX");
    let out = common::run_process(cmd, b"", Duration::from_secs(60))
        .unwrap_or_else(|e| panic!("cannot start armada: {e}"));
    ArmadaRun {
        status: out.status,
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
    }
}

fn qemu_status(args: &[&std::ffi::OsStr]) -> i32 {
    let mut cmd = Command::new(common::qemu_bin());
    cmd.args(args).env_remove("QEMU_LD_PREFIX");
    common::run_process(cmd, b"", Duration::from_secs(60))
        .map(|o| o.status)
        .unwrap_or(-1)
}

/// The ELF machine of a host file (None if it is not an ELF file).
fn elf_machine(p: &Path) -> Option<u16> {
    let b = fs::read(p).ok()?;
    (b.len() >= 20 && b[..4] == *b"\x7fELF").then(|| u16::from_le_bytes([b[18], b[19]]))
}

#[test]
fn bad_interpreter_is_reported() {
    const TEST: &str = "bad_interpreter_is_reported";
    let Some(d) = cross_setup(TEST) else {
        return;
    };
    let mut problems = Vec::new();
    let mut check = |what: &str, r: &ArmadaRun, needles: &[&str]| {
        let mut bad = Vec::new();
        if r.status != 125 {
            bad.push(format!("exit status {} (want 125)", r.status));
        }
        for n in needles {
            if !r.stderr.contains(n) {
                bad.push(format!("stderr does not mention {n:?}"));
            }
        }
        if r.stderr.contains("panicked") || r.stderr.contains("RUST_BACKTRACE") {
            bad.push("armada panicked".to_string());
        }
        if !r.stdout.is_empty() {
            bad.push(format!("unexpected stdout {:?}", r.stdout));
        }
        if bad.is_empty() {
            common::loud(&format!("ok      {what}: {}", r.stderr.trim()));
        } else {
            problems.push(format!(
                "{what}: {}\n      armada stderr: {}",
                bad.join("; "),
                r.stderr.trim()
            ));
        }
    };

    let missing = d.join("badinterp-missing");
    // qemu refuses it too (premise of the test)
    assert_ne!(
        qemu_status(&[missing.as_os_str()]),
        0,
        "qemu ran {}",
        missing.display()
    );
    let r = armada_run(&[missing.as_os_str()]);
    check("interpreter missing, no -L", &r, &[MISSING_INTERP, "-L"]);
    let r = armada_run(&["-L".as_ref(), CROSS_SYSROOT.as_ref(), missing.as_os_str()]);
    check("interpreter missing under -L", &r, &[MISSING_INTERP]);

    let x86 = d.join("badinterp-x86");
    match elf_machine(Path::new(X86_INTERP)) {
        Some(m) if m != 183 => {
            assert_ne!(qemu_status(&[x86.as_os_str()]), 0, "qemu ran {}", x86.display());
            let r = armada_run(&[x86.as_os_str()]);
            check("interpreter is a host (non-AArch64) ELF", &r, &[X86_INTERP]);
        }
        other => common::loud(&format!(
            "{TEST}: note: {X86_INTERP} is {} on this host; the non-AArch64 interpreter case is skipped",
            match other {
                Some(_) => "an AArch64 ELF",
                None => "missing or not an ELF file",
            }
        )),
    }
    assert!(
        problems.is_empty(),
        "{TEST}: armada's errors for bad interpreters:\n  - {}",
        problems.join("\n  - ")
    );
}

// ---------------------------------------------------------------------------------------
// armada batch -L: every lane as under qemu

/// `armada batch --lanes N -L SYSROOT --clear-env -E ... --output-dir OUT PROG ARGS`, lane i
/// compared with `qemu-aarch64 -L SYSROOT PROG ARGS` ({lane} replaced by i) under the same
/// environment: stdout, stderr and exit status.
fn batch_vs_qemu(
    name: &str,
    sysroot: &Path,
    prog: &Path,
    args: &[&str],
    lanes: usize,
    work: &Path,
) -> Vec<String> {
    commands_vs_qemu(name, sysroot, &[(prog, args)], lanes, &[], &[], work)
}

/// As [`batch_vs_qemu`] for lanes of several programs: with more than one command, `armada
/// batch --commands FILE` (one shell-quoted line each; lane i runs command i mod commands),
/// and `--stdin-dir` when `stdins` is not empty (lane i reads `stdins[i % len]`, as qemu
/// does); `extra` goes to armada batch's options (`--backend cuda --check`, say).
fn commands_vs_qemu(
    name: &str,
    sysroot: &Path,
    commands: &[(&Path, &[&str])],
    lanes: usize,
    extra: &[&str],
    stdins: &[&[u8]],
    work: &Path,
) -> Vec<String> {
    const ENV: [(&str, &str); 3] = [
        ("HOME", "/nowhere"),
        ("LANG", "C"),
        ("PYTHONDONTWRITEBYTECODE", "1"),
    ];
    let out_dir = work.join(format!("{name}.out"));
    let jsonl = work.join(format!("{name}.jsonl"));
    let mut cmd = Command::new(common::armada_bin());
    cmd.arg("batch")
        .arg("--no-progress")
        .arg("--lanes")
        .arg(lanes.to_string())
        .arg("-L")
        .arg(sysroot)
        .arg("--clear-env")
        .args(extra);
    for (k, v) in ENV {
        cmd.arg("-E").arg(format!("{k}={v}"));
    }
    if !stdins.is_empty() {
        let dir = work.join(format!("{name}.in"));
        fs::create_dir_all(&dir).unwrap();
        for lane in 0..lanes {
            fs::write(dir.join(lane.to_string()), stdins[lane % stdins.len()]).unwrap();
        }
        cmd.arg("--stdin-dir").arg(dir);
    }
    cmd.arg("--output-dir")
        .arg(&out_dir)
        .arg("--out")
        .arg(&jsonl);
    if let [(prog, args)] = commands {
        cmd.arg(prog).args(*args);
    } else {
        let file = work.join(format!("{name}.commands"));
        let text: String = commands
            .iter()
            .map(|(p, args)| {
                let words: Vec<String> = std::iter::once(p.to_string_lossy().into_owned())
                    .chain(args.iter().map(|a| a.to_string()))
                    .map(|w| format!("'{}'", w.replace('\'', "'\\''")))
                    .collect();
                words.join(" ") + "\n"
            })
            .collect();
        fs::write(
            &file,
            format!("# {name}: one lane's command a line\n\n{text}"),
        )
        .unwrap();
        cmd.arg("--commands").arg(file);
    }
    cmd.current_dir(work).env_remove("QEMU_LD_PREFIX");
    let b = common::run_process(cmd, b"", common::default_timeout())
        .unwrap_or_else(|e| panic!("cannot start armada batch: {e}"));
    let mut problems = Vec::new();
    let lines: Vec<String> = fs::read_to_string(&jsonl)
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect();
    if lines.len() != lanes {
        return vec![format!(
            "{name}: armada batch ({}) wrote {} result lines for {lanes} lanes; stderr:\n{}",
            b.status_text,
            lines.len(),
            String::from_utf8_lossy(&b.stderr)
        )];
    }
    if extra.contains(&"--check") && b.status != 0 && b.status != 1 {
        problems.push(format!(
            "{name}: armada batch {} {}; stderr:\n{}",
            extra.join(" "),
            b.status_text,
            String::from_utf8_lossy(&b.stderr)
        ));
    }
    for (lane, line) in lines.iter().enumerate() {
        let (prog, args) = commands[lane % commands.len()];
        let largs: Vec<String> = args
            .iter()
            .map(|a| a.replace("{lane}", &lane.to_string()))
            .collect();
        let mut q = Command::new(common::qemu_bin());
        q.arg("-L")
            .arg(sysroot)
            .arg(prog)
            .args(&largs)
            .current_dir(work)
            .env_clear();
        for (k, v) in ENV {
            q.env(k, v);
        }
        let stdin = if stdins.is_empty() {
            &b""[..]
        } else {
            stdins[lane % stdins.len()]
        };
        let q = common::run_process(q, stdin, common::default_timeout())
            .unwrap_or_else(|e| panic!("cannot start qemu: {e}"));
        let a_out = fs::read(out_dir.join(format!("{lane}.stdout"))).unwrap_or_default();
        let a_err = fs::read(out_dir.join(format!("{lane}.stderr"))).unwrap_or_default();
        let want_status = format!("\"status\":{},", q.status);
        if !line.contains(&want_status) {
            problems.push(format!(
                "{name} lane {lane}: qemu {} but armada batch says {}",
                q.status_text, line
            ));
        }
        if let Some(d) = common::first_difference(&q.stdout, &a_out) {
            problems.push(format!("{name} lane {lane}: stdout differs: {d}"));
        }
        if let Some(d) = common::first_difference(&q.stderr, &a_err) {
            problems.push(format!("{name} lane {lane}: stderr differs: {d}"));
        }
    }
    if problems.is_empty() {
        common::loud(&format!(
            "ok      batch {name}: {lanes} lanes as under qemu"
        ));
    }
    problems
}

#[test]
fn batch_with_sysroot_matches_qemu() {
    const TEST: &str = "batch_with_sysroot_matches_qemu";
    let Some(d) = cross_setup(TEST) else {
        return;
    };
    let work = std::env::temp_dir().join(format!("armada-dynamic-batch-{}", std::process::id()));
    let _ = fs::remove_dir_all(&work);
    fs::create_dir_all(&work).unwrap();
    let cross = Path::new(CROSS_SYSROOT);
    let mut problems = Vec::new();
    problems.extend(batch_vs_qemu(
        "argv_env",
        cross,
        &d.join("argv_env"),
        &["lane", "{lane}"],
        3,
        &work,
    ));
    problems.extend(batch_vs_qemu(
        "cxx_features",
        cross,
        &d.join("cxx_features"),
        &[],
        2,
        &work,
    ));
    problems.extend(batch_vs_qemu(
        "use_armadadyn",
        cross,
        &d.join("use_armadadyn"),
        &["{lane}"],
        2,
        &work,
    ));
    match common::debian_sysroot(&["usr/lib/ld-linux-aarch64.so.1", "usr/bin/python3"]) {
        Ok(s) => problems.extend(batch_vs_qemu(
            "python3",
            &s,
            &s.join("usr/bin/python3"),
            &[
                "-c",
                "import sys; n = int(sys.argv[1]); print(n, 7 ** (n + 40)); sys.exit(n)",
                "{lane}",
            ],
            3,
            &work,
        )),
        Err(e) => common::unavailable(TEST, &e),
    }
    if std::env::var_os("ARMADA_TEST_KEEP").is_none() {
        let _ = fs::remove_dir_all(&work);
    }
    assert!(
        problems.is_empty(),
        "{TEST}:\n  - {}",
        problems.join("\n  - ")
    );
}

/// `armada batch --commands`: one batch of a static program reading its own stdin, a
/// dynamically linked one with a lane argument, Debian's dash running a pipeline and
/// `$(...)` (forks, execs of coreutils) and python3 starting threads, every lane as under
/// qemu-aarch64; then the same batch on the CUDA engine's simulator with `--check` (each
/// lane also identical to the CPU engine, instructions included).
#[test]
fn batch_of_several_programs_matches_qemu() {
    const TEST: &str = "batch_of_several_programs_matches_qemu";
    let Some(d) = cross_setup(TEST) else {
        return;
    };
    let sysroot = match common::debian_sysroot(&["bin/dash", "usr/bin/tr", "usr/bin/python3"]) {
        Ok(s) => s,
        Err(e) => return common::unavailable(TEST, &e),
    };
    let guest = common::guest_programs_dir().unwrap_or_else(|e| panic!("{TEST}: {e}"));
    let work = std::env::temp_dir().join(format!("armada-dynamic-mixed-{}", std::process::id()));
    let _ = fs::remove_dir_all(&work);
    fs::create_dir_all(&work).unwrap();
    let (stdin_sum, argv_env) = (guest.join("stdin_sum"), d.join("argv_env"));
    let (dash, python) = (sysroot.join("bin/dash"), sysroot.join("usr/bin/python3"));
    let commands: [(&Path, &[&str]); 4] = [
        (&stdin_sum, &[]),
        (&argv_env, &["lane", "{lane}"]),
        (
            &dash,
            &[
                "-c",
                "x=$(echo lane-$1 | tr a-z A-Z); echo \"$x\"; printf 'b\\na\\n' | sort",
                "sh",
                "{lane}",
            ],
        ),
        (
            &python,
            &[
                "-c",
                "import sys, threading; r = []; t = [threading.Thread(target=r.append, args=(i * i,)) for i in range(3)]; [x.start() for x in t]; [x.join() for x in t]; print(sys.argv[1], sorted(r), sys.stdin.read())",
                "{lane}",
            ],
        ),
    ];
    let stdins: [&[u8]; 3] = [b"one line\n", b"", b"two\nlines\n"];
    let mut problems = commands_vs_qemu("mixed", &sysroot, &commands, 8, &[], &stdins, &work);
    if armada_cuda::HAS_SIM {
        // (the simulator stands in for a GPU: the lanes run in the CUDA kernel's code)
        std::env::set_var("ARMADA_CUDA_SIM", "1");
        problems.extend(commands_vs_qemu(
            "mixed-cuda",
            &sysroot,
            &commands,
            8,
            &["--backend", "cuda", "--check"],
            &stdins,
            &work,
        ));
    } else {
        common::loud(&format!(
            "{TEST}: note: no CUDA simulator in this build; the CPU engine's batch alone"
        ));
    }
    if std::env::var_os("ARMADA_TEST_KEEP").is_none() {
        let _ = fs::remove_dir_all(&work);
    }
    assert!(
        problems.is_empty(),
        "{TEST}:\n  - {}",
        problems.join("\n  - ")
    );
}
