//! Guest processes: fork, vfork, clone without CLONE_VM, execve/execveat (ELF and `#!`
//! scripts), wait4/waitid, getppid, kill between processes, process groups and sessions,
//! pipes and sockets shared between processes, SIGCHLD and SIGPIPE.
//!
//! Differential cases (each run under `armada run` and `qemu-aarch64`, stdout, stderr where
//! deterministic, exit status and the files left in the working directory compared; see
//! tests/common/mod.rs):
//! - [`shell_scripts_match_qemu`]: busybox sh (Debian's busybox-static) and bash-static scripts:
//!   pipelines, `$(...)`, subshells, `&` and `wait`, xargs, `find -exec`, here-documents,
//!   traps, pipefail, SIGPIPE, `kill`, `exec`, 1,000 processes, and the errors of a missing
//!   file, a directory, a missing `#!` interpreter and `wait` for a non-child.
//! - [`c_programs_match_qemu`]: our C programs of tests/guest/processes (built by
//!   tests/guest/build-processes.sh into target/guest-processes, or
//!   `$ARMADA_GUEST_PROCESSES_DIR`): wait statuses, WNOHANG, waitid, SIGCHLD, re-parenting,
//!   pipes, dup2+execve, shared offsets, close-on-exec, vfork, posix_spawn, `#!` scripts,
//!   kill/killpg, setsid, SIGPIPE/EPIPE, poll, socketpair, 200 zombies, ECHILD.
//! - [`python_perl_match_qemu`]: python3's subprocess and perl's system/backticks from the
//!   Debian sysroot (`target/sysroot`, scripts/sysroot.sh) under `-L`, with `QEMU_LD_PREFIX`
//!   set for both runs (qemu's exec'd children find their libraries through it).
//!
//! Armada only ([`armada_only_checks`]), each with the reason it is not compared with qemu:
//! - exec of a host (x86-64) program: armada refuses it with ENOEXEC, but qemu's execve is the
//!   host's, and with binfmt_misc (or natively) the host program simply runs;
//! - `--max-processes N`: fork fails with EAGAIN at the cap and armada ends cleanly (qemu has
//!   no such cap; an unbounded fork bomb would hurt the host);
//! - where qemu 7.2 is not Linux, armada must print what Linux prints (checked against a
//!   native build of the same program on Linux): posix_spawn of a missing file returns
//!   ENOENT (qemu runs glibc's CLONE_VM|CLONE_VFORK child as a fork, so the error never
//!   reaches the parent: qemu says 0 and the child exits 127), SA_NOCLDWAIT (qemu ignores
//!   the flag), PR_SET_CHILD_SUBREAPER (EINVAL under qemu) and execveat (ENOSYS under qemu).
//!
//! How the qemu side runs exec'd programs: qemu-user's execve is the host's execve, so an
//! arm64 program exec'd by a guest runs under qemu only when binfmt_misc knows arm64 ELF
//! files (scripts/test registers it as Debian's qemu-user-binfmt does). Without that
//! registration these tests skip, or fail under CI / ARMADA_TEST_STRICT with "binfmt is
//! missing"; on a machine where binfmt_misc cannot even be mounted (no root, a container
//! that may not), they skip loudly under CI too, since no setup could make them run. Every program the scripts exec is an arm64 one: busybox by its path (`$BB`,
//! busybox's own applets run through /proc/self/exe) or a directory of symlinks to busybox
//! and bash-static that is the scripts' whole PATH, never /bin/* (x86-64 host programs, which
//! armada rightly refuses with ENOEXEC).
//!
//! Pids differ between runs: programs print relations (a pid > 0, getppid() == the parent's
//! pid), never numbers.

mod common;

use common::{Case, RunOutput};
use std::ffi::OsString;
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;

// ---------------------------------------------------------------------------------------
// What the tests need

/// The magic binfmt_misc must match for arm64 ELF executables (qemu's qemu-binfmt-conf.sh).
const AARCH64_MAGIC: &str = "7f454c460201010000000000000000000200b700";

/// Whether binfmt_misc has an enabled entry for arm64 ELF files, else why not.
fn binfmt_aarch64() -> Result<(), String> {
    let dir = Path::new("/proc/sys/fs/binfmt_misc");
    let missing = |why: &str| {
        Err(format!(
            "binfmt is missing: {why}, so qemu-aarch64 cannot run the arm64 programs its guests exec \
             (register it as root the way Debian's qemu-user-binfmt does; scripts/test does)"
        ))
    };
    if !dir.join("register").exists() {
        return missing("/proc/sys/fs/binfmt_misc is not mounted");
    }
    let status = fs::read_to_string(dir.join("status")).unwrap_or_default();
    if status.trim() != "enabled" {
        return missing("binfmt_misc is disabled (/proc/sys/fs/binfmt_misc/status)");
    }
    let Ok(rd) = fs::read_dir(dir) else {
        return missing("/proc/sys/fs/binfmt_misc cannot be read");
    };
    for e in rd.flatten() {
        let text = fs::read_to_string(e.path()).unwrap_or_default();
        if text.lines().next() == Some("enabled")
            && text
                .lines()
                .any(|l| l.strip_prefix("magic ") == Some(AARCH64_MAGIC))
        {
            return Ok(());
        }
    }
    missing("no enabled binfmt_misc entry for arm64 ELF files (qemu-aarch64)")
}

/// Builds tests/guest/processes once per test process (tests/guest/build-processes.sh).
fn programs_dir() -> Result<PathBuf, String> {
    static BUILT: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            let root = common::workspace_root();
            let out_dir = match std::env::var_os("ARMADA_GUEST_PROCESSES_DIR") {
                Some(d) if !d.is_empty() => PathBuf::from(d),
                _ => root.join("target/guest-processes"),
            };
            let script = root.join("tests/guest/build-processes.sh");
            let out = Command::new("bash")
                .arg(&script)
                .arg(&out_dir)
                .current_dir(&root)
                .output()
                .map_err(|e| format!("could not run {}: {e}", script.display()))?;
            if !out.status.success() {
                return Err(format!(
                    "{} {} failed ({}):\n{}{}",
                    script.display(),
                    out_dir.display(),
                    out.status,
                    String::from_utf8_lossy(&out.stdout),
                    String::from_utf8_lossy(&out.stderr)
                ));
            }
            Ok(out_dir)
        })
        .clone()
}

/// busybox's applets the scripts call by name from bash (busybox sh runs its own applets
/// through /proc/self/exe whatever PATH says).
const APPLETS: &[&str] = &[
    "sh", "echo", "cat", "wc", "head", "tail", "tr", "sort", "uniq", "seq", "grep", "xargs",
    "find", "true", "false", "sleep", "yes", "env", "chmod", "mkdir", "rm", "printf", "test",
    "expr", "cut", "tee", "kill", "ls", "diff", "od",
];

/// Everything the differential tests share.
struct Env {
    busybox: PathBuf,
    bash: PathBuf,
    /// Symlinks to busybox (one per applet of [`APPLETS`]) and `bash` -> bash-static: the
    /// scripts' whole PATH.
    bin: PathBuf,
}

/// A directory of symlinks `NAME -> busybox` and `bash -> bash-static`, made once.
fn make_bin_dir(busybox: &Path, bash: &Path) -> Result<PathBuf, String> {
    let dir = common::workspace_root().join("target/guest-processes-bin");
    fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let links = APPLETS
        .iter()
        .map(|a| (*a, busybox))
        .chain(std::iter::once(("bash", bash)));
    for (name, target) in links {
        let link = dir.join(name);
        if fs::read_link(&link).ok().as_deref() == Some(target) {
            continue;
        }
        let tmp = dir.join(format!(".{name}.{}", std::process::id()));
        let _ = fs::remove_file(&tmp);
        std::os::unix::fs::symlink(target, &tmp)
            .and_then(|_| fs::rename(&tmp, &link))
            .map_err(|e| format!("cannot make {}: {e}", link.display()))?;
    }
    Ok(dir)
}

/// dpkg-deb, busybox and bash, and with `qemu` set qemu-aarch64 and binfmt_misc; `None`
/// after a skip (a panic under CI).
fn setup(test: &str, qemu: bool) -> Option<Env> {
    let mut tools: Vec<OsString> = vec!["dpkg-deb".into()];
    if qemu {
        tools.push(common::qemu_bin());
    }
    if !common::require_tools(test, &tools) {
        return None;
    }
    common::require_armada(test);
    if qemu {
        if let Err(e) = binfmt_aarch64() {
            if Path::new("/proc/sys/fs/binfmt_misc/register").exists() {
                // binfmt_misc is there: the setup (scripts/test) should have registered
                // arm64, so on CI this is a failure
                common::unavailable(test, &e);
            } else {
                // this machine cannot have binfmt_misc (no root, a container that may not
                // mount it): the comparison with qemu cannot run here, CI or not
                common::loud(&format!(
                    "\n################################################################################\n\
                     ### SKIPPED (even under CI): {test}: {e}\n\
                     ### binfmt_misc cannot be mounted on this machine\n\
                     ################################################################################"
                ));
            }
            return None;
        }
    }
    static TOOLS: OnceLock<Result<(PathBuf, PathBuf, PathBuf), String>> = OnceLock::new();
    let tools = TOOLS.get_or_init(|| {
        let dir = common::deps_dir();
        let mut found = Vec::new();
        for (pkg, bin) in [
            ("busybox-static", "bin/busybox"),
            ("bash-static", "bin/bash-static"),
        ] {
            let deb = common::find_deb(&dir, pkg).ok_or_else(|| {
                format!(
                    "{pkg} arm64 .deb not found in {} (scripts/test downloads it; or run \
                     `apt-get download {pkg}:arm64` there)",
                    dir.display()
                )
            })?;
            let p = common::extract(&deb)?.join(bin);
            if !p.is_file() {
                return Err(format!("{} missing after extracting the deb", p.display()));
            }
            found.push(p);
        }
        let bin = make_bin_dir(&found[0], &found[1])?;
        Ok((found[0].clone(), found[1].clone(), bin))
    });
    match tools {
        Ok((busybox, bash, bin)) => Some(Env {
            busybox: busybox.clone(),
            bash: bash.clone(),
            bin: bin.clone(),
        }),
        Err(e) => {
            common::unavailable(test, e);
            None
        }
    }
}

/// The C programs, built; `None` after a skip (a panic under CI, or when the build fails).
fn c_programs(test: &str) -> Option<PathBuf> {
    if !common::require_tools(test, &["aarch64-linux-gnu-gcc".into()]) {
        return None;
    }
    match programs_dir() {
        Ok(d) => Some(d),
        Err(e) => panic!("{test}: {e}"), // the compiler is there, so this is a real failure
    }
}

/// The environment every case gets on top of common::base_env: `BB` (busybox's path) and a
/// PATH of arm64 programs only. PATH goes through `-E` (both qemu and armada have it) so that
/// it is the guest's alone: the harness still finds qemu-aarch64 through its own PATH.
fn with_env(case: Case, env: &Env) -> Case {
    let mut path = OsString::from("PATH=");
    path.push(&env.bin);
    case.env("BB", &env.busybox)
        .qemu_arg("-E")
        .qemu_arg(path.clone())
        .armada_arg("-E")
        .armada_arg(path)
}

// ---------------------------------------------------------------------------------------
// Shell scripts

#[derive(Clone, Copy, PartialEq)]
enum Shells {
    Both,
    Busybox,
    Bash,
}

struct Script {
    name: &'static str,
    shells: Shells,
    text: String,
    status: i32,
    /// stderr has pids (bash's job reports) or otherwise differs legitimately.
    ignore_stderr: bool,
    files: Vec<(String, Vec<u8>)>,
}

fn script(name: &'static str, shells: Shells, text: impl Into<String>) -> Script {
    Script {
        name,
        shells,
        text: text.into(),
        status: 0,
        ignore_stderr: false,
        files: Vec::new(),
    }
}

impl Script {
    fn status(mut self, s: i32) -> Script {
        self.status = s;
        self
    }
    fn ignore_stderr(mut self) -> Script {
        self.ignore_stderr = true;
        self
    }
    fn file(mut self, name: &str, data: &[u8]) -> Script {
        self.files.push((name.to_string(), data.to_vec()));
        self
    }
}

fn big_heredoc() -> String {
    let mut s = String::from("n=0\ncat > big.txt <<EOF\n");
    for i in 0..3000 {
        let _ = writeln!(s, "line {i} \\$literal $((i * 2))", i = i);
    }
    s.push_str("EOF\nwc -l < big.txt\ntail -n 2 big.txt\nwhile read -r a b c d; do n=$((n + b)); done <<EOF\n");
    for i in 0..500 {
        let _ = writeln!(s, "x {i} y z");
    }
    s.push_str("EOF\necho \"sum $n\"\n");
    s
}

fn scripts() -> Vec<Script> {
    use Shells::*;
    vec![
        script("pipe echo | wc", Both, "echo hi | wc -c; echo hello world | tr a-z A-Z; echo ${PIPESTATUS:-none} >/dev/null"),
        script(
            "pipe 3 and 4 stages",
            Both,
            "seq 1 200 | grep 7 | wc -l\nprintf 'b\\na\\nc\\nb\\n' | sort | uniq -c\nseq 5 | tr 1-5 a-e | sort -r | head -n 2",
        ),
        script(
            "command substitution",
            Both,
            r#"x=$(echo a; echo b); echo "[$x]"
y=`echo back ticks`; echo "$y"
n=$(seq 10 | wc -l); echo $((n * 2))
echo "nested: $(echo outer $(echo inner $(echo innermost)))"
z=$(exit 7); echo "status of an assignment from a substitution: $?"
echo "trailing newlines stripped: [$(printf 'a\n\n\n')]"
big=$(seq 1 20000); echo ${#big}
echo "builtin only: $(echo $((6 * 7)))""#,
        ),
        script(
            "subshells",
            Both,
            r#"x=1; (x=2; echo "in the subshell x=$x"; exit 3); echo "after: status=$? x=$x"
(echo a; (echo b; (echo c))) | wc -l
( exit 1 ) || echo "or-branch"
{ echo grouped; echo twice; } | cat
(cd /; echo "cd in a subshell"); [ -e $HOME ] && echo "still in the work dir"
(trap 'echo "subshell EXIT trap"' EXIT; echo "in subshell")"#,
        ),
        script(
            "background jobs and wait",
            Both,
            r#"(exit 3) & p1=$!
(exit 5) & p2=$!
wait $p2; echo "second: $?"
wait $p1; echo "first: $?"
for i in 1 2 3; do (echo "job $i" > out$i.txt) & done
wait; echo "wait for all: $?"
cat out1.txt out2.txt out3.txt
false & wait $!; echo "false in the background: $?"
sleep 0.1 & wait $!; echo "sleep: $?"
[ $! -gt 0 ] && echo '$! is positive'
(sleep 0.2; echo "late job done") &
echo "before the late job"
wait"#,
        ),
        script(
            "xargs",
            Both,
            r#"seq 1 10 | xargs -n 3 echo
printf 'a b\nc\n' | xargs echo got
seq 3 | xargs -I{} sh -c 'echo item {}; exit 0'
echo x | xargs false; echo "xargs false: $?"
echo x | xargs sh -c 'exit 255'; echo "xargs exit 255: $?""#,
        )
        .ignore_stderr(),
        script(
            "find -exec",
            Both,
            r#"find dir -name '*.txt' -exec cat {} \; | sort
find dir -type f -exec wc -c {} + | sort
find dir -name '*.txt' -exec sh -c 'echo "$1" has $(wc -l < "$1") lines' sh {} \; | sort"#,
        )
        .file("dir/a.txt", b"alpha\n")
        .file("dir/b.txt", b"bravo\nbravo\n")
        .file("dir/sub/c.txt", b"charlie\ncharlie\ncharlie\n")
        .file("dir/sub/d.dat", b"0123456789"),
        script(
            "here-documents",
            Both,
            r#"x=value
cat <<EOF
x is $x
$(echo substituted) `echo backticked`
EOF
cat <<'EOF'
literal $x $(not run)
EOF
tr a-z A-Z <<EOF | wc -c
$(seq 1 100)
EOF
sh -s arg1 arg2 <<'EOF'
echo "script on stdin: $# $1 $2"
EOF"#,
        ),
        script("here-document of 3000 lines", Both, big_heredoc()),
        script(
            "trap EXIT",
            Both,
            r#"trap 'echo "exit trap ran, status $?"' EXIT
echo body
(trap 'echo subshell exit trap' EXIT; echo in subshell)
sh -c 'trap "echo inner trap" EXIT; exit 3'; echo "inner status $?"
exit 4"#,
        )
        .status(4),
        script(
            "trap signal sent to self",
            Both,
            r#"trap 'echo got USR1' USR1
kill -USR1 $$
echo after USR1
trap 'echo got HUP' HUP
kill -HUP $$; kill -HUP $$
trap 'echo got TERM; exit 9' TERM
kill $$
echo not reached"#,
        )
        .status(9),
        script(
            "trap in a child killed by the parent",
            Both,
            r#"( trap 'echo child got TERM; exit 7' TERM; : > ready; while :; do :; done ) &
pid=$!
while [ ! -e ready ]; do :; done
kill $pid; wait $pid; echo "child status $?"
( trap '' TERM; : > ready2; while [ ! -e go ]; do :; done; echo "child ignored TERM" ) &
pid=$!
while [ ! -e ready2 ]; do :; done
kill $pid; : > go; wait $pid; echo "status $?""#,
        ),
        script(
            "pipefail",
            Both,
            r#"set -o pipefail
false | true; echo "false | true: $?"
true | (exit 3) | true; echo "middle 3: $?"
(exit 2) | (exit 3) | true; echo "rightmost failure wins: $?"
set +o pipefail
false | true; echo "without pipefail: $?""#,
        ),
        script(
            "PIPESTATUS",
            Bash,
            r#"true | false | (exit 5); echo "${PIPESTATUS[@]}"
yes | head -n 1 > /dev/null; echo "${PIPESTATUS[@]}"
set -o pipefail; yes | head -n 2; echo "pipefail: $?""#,
        ),
        script(
            "kill a background child",
            Both,
            r#"sleep 10 & p=$!
kill $p; wait $p; echo "SIGTERM: $?"
sleep 10 & p=$!
kill -9 $p; wait $p; echo "SIGKILL: $?"
sleep 10 & p=$!
kill -USR1 $p; wait $p; echo "SIGUSR1: $?"
kill $p 2>/dev/null; echo "kill of a reaped job: $?""#,
        )
        .ignore_stderr(), // the shells report killed jobs, bash with their pids
        script(
            "SIGPIPE yes | head",
            Both,
            r#"yes | head -n 3; echo "status $?"
set -o pipefail
yes | head -n 3; echo "with pipefail: $?"
yes | (read a; echo "read $a"); echo "status $?"
seq 1 100000 | head -c 10; echo; echo "seq: $?""#,
        ),
        script(
            "1000 processes (subshells)",
            Both,
            r#"i=0; sum=0
while [ $i -lt 1000 ]; do (exit $((i % 3))); sum=$((sum + $?)); i=$((i + 1)); done
echo "$i subshells, statuses sum to $sum""#,
        ),
        script(
            "1000 execs of busybox true",
            Busybox,
            r#"i=0
while [ $i -lt 1000 ]; do "$BB" true || exit 1; i=$((i + 1)); done
echo "$i runs of busybox true""#,
        ),
        script(
            "nested sh -c",
            Busybox,
            r#"sh -c 'sh -c "echo deep \$0 \$1; exit 3" name one; echo "mid $?"; exit 4'; echo "top $?"
sh -c 'sh -c "sh -c \"exit 5\"; exit \$((\$? + 1))"'; echo "three levels: $?""#,
        ),
        script(
            "nested bash -c",
            Bash,
            r#"bash -c 'bash -c "echo deep \$0 \$1; exit 3" name one; echo "mid $?"; exit 4'; echo "top $?"
bash -c 'sh -c "bash -c \"exit 5\"; exit \$((\$? + 1))"'; echo "three levels: $?""#,
        ),
        script(
            "child killed by a signal",
            Both,
            r#"sh -c 'kill -9 $$'; echo "SIGKILL: $?"
sh -c 'kill -TERM $$'; echo "SIGTERM: $?"
sh -c 'kill -INT $$'; echo "SIGINT: $?"
sh -c 'kill -USR2 $$'; echo "SIGUSR2: $?""#,
        )
        .ignore_stderr(), // bash names the killed child with its pid
        script(
            "exec replaces the shell",
            Both,
            r#"(exec echo "exec in a subshell"); echo "status $?"
(exec false); echo "exec false: $?"
exec 3> fd3.txt; echo "to fd 3" >&3; exec 3>&-; cat fd3.txt
sh -c 'exec sh -c "echo \$0 replaced" named'
exec env FOO=bar sh -c 'echo "FOO=$FOO"; exit 6'
echo not reached"#,
        )
        .status(6),
        script(
            "redirections 2>&1 |",
            Both,
            r#"{ echo out; echo err >&2; } 2>&1 | sort
cat missing-file 2>&1 | wc -l
sh -c 'echo e1 >&2; echo o1' 2>&1 >/dev/null | tr a-z A-Z
ls missing-dir 2>&1 >/dev/null | head -c 20; echo
sh -c 'echo to-stderr >&2' 2> err.txt; cat err.txt"#,
        ),
        script(
            "process substitution",
            Bash,
            r#"diff <(seq 3) <(seq 3) && echo same
while read -r x; do echo "got $x"; done < <(seq 3)
cat <(echo from) <(echo two) <(echo substitutions)
echo "$(< <(echo read through /dev/fd))""#,
        ),
        // bad input
        script(
            "exec of a missing file",
            Both,
            r#"./no-such-file; echo "status $?"
no-such-command; echo "status $?"
/no/such/dir/prog; echo "status $?""#,
        ),
        script("exec of a directory", Both, r#"./dir; echo "status $?""#)
            .file("dir/x.txt", b"x\n"),
        script(
            "#! interpreter missing",
            Both,
            r#"chmod +x bad.sh; ./bad.sh; echo "status $?""#,
        )
        .file("bad.sh", b"#!/nonexistent/interpreter\necho not run\n"),
        script(
            "#! script runs",
            Both,
            r#"printf '#!%s sh\necho "$# args: $*"\nexit 3\n' "$BB" > good.sh
chmod +x good.sh; ./good.sh a 'b c'; echo "status $?"
sh good.sh x; echo "sh good.sh: $?""#,
        ),
        script(
            "wait for a non-child",
            Both,
            r#"wait 1; echo "wait 1: $?"
wait $$ 2>/dev/null; echo "wait \$\$: $?""#,
        ),
    ]
}

fn shell_cases(env: &Env) -> Vec<Case> {
    let mut cases = Vec::new();
    for s in scripts() {
        let mut variants = Vec::new();
        if s.shells != Shells::Bash {
            variants.push((
                "sh",
                env.busybox.clone(),
                vec![OsString::from("sh"), "-c".into()],
            ));
        }
        if s.shells != Shells::Busybox {
            variants.push(("bash", env.bash.clone(), vec![OsString::from("-c")]));
        }
        for (shell, program, args) in variants {
            let mut c = Case::new(format!("{shell}: {}", s.name), program)
                .args(args)
                .arg(&s.text)
                .files(&s.files)
                .expect_status(s.status);
            if s.ignore_stderr {
                c = c.ignore_stderr();
            }
            cases.push(with_env(c, env));
        }
    }
    cases
}

#[test]
fn shell_scripts_match_qemu() {
    const TEST: &str = "shell_scripts_match_qemu";
    let Some(env) = setup(TEST, true) else { return };
    common::run_suite("processes-shell", shell_cases(&env));
}

// ---------------------------------------------------------------------------------------
// C programs

fn c_cases(env: &Env, dir: &Path) -> Vec<Case> {
    let bb = env.busybox.as_os_str();
    let mut v = Vec::new();
    let mut add = |name: &str, program: &str, args: &[&OsStr], status: i32| {
        let c = Case::new(name.to_string(), dir.join(program))
            .args(args.iter().copied())
            .expect_status(status);
        v.push(with_env(c, env));
    };
    use std::ffi::OsStr;
    let s = |x: &'static str| OsStr::new(x);
    for m in ["exits", "signals", "stop", "stdio"] {
        add(&format!("wait_status {m}"), "wait_status", &[s(m)], 0);
    }
    add("wnohang", "wnohang", &[], 0);
    add("waitid", "waitid", &[], 0);
    for m in ["count", "ign", "default", "eintr"] {
        add(&format!("sigchld {m}"), "sigchld", &[s(m)], 0);
    }
    for m in ["child", "orphan"] {
        add(&format!("getppid {m}"), "getppid", &[s(m)], 0);
    }
    add("pipes", "pipes", &[], 0);
    add("dup2 + execve busybox", "dup2_exec", &[bb], 0);
    add("fd offsets shared across fork", "fd_offset", &[], 0);
    add("O_CLOEXEC across execve", "cloexec", &[], 0);
    add("vfork + execve", "vfork_exec", &[bb], 0);
    add("posix_spawn", "spawn", &[bb], 0);
    add("execve of #! scripts", "script_exec", &[bb], 0);
    add("execve errors, fexecve", "exec_errors", &[bb], 0);
    add("kill, killpg, setpgid", "kill_pgrp", &[], 0);
    add("PR_SET_PDEATHSIG", "pdeathsig", &[], 0);
    add("setsid, getsid", "setsid", &[], 0);
    add("SIGPIPE and EPIPE", "sigpipe", &[], 0);
    add("nonblocking pipe, poll, select", "nonblock_poll", &[], 0);
    add("socketpair", "socketpair", &[], 0);
    add("200 zombies reaped", "zombies", &[], 0);
    add("wait for non-children (ECHILD)", "wait_errors", &[], 0);
    add("fork with threads, atfork", "fork_threads", &[], 0);
    // children dying by SIGSEGV/SIGABRT/SIGILL: qemu prints "uncaught target signal" lines
    // on stderr and armada its fault line, so only stdout and the status are compared.
    v.push(with_env(
        Case::new("wait_status faults", dir.join("wait_status"))
            .arg("faults")
            .expect_status(0)
            .ignore_stderr(),
        env,
    ));
    // Go's os/exec: clone(CLONE_VM|CLONE_VFORK) from a process with several threads (built
    // by tests/guest/build-threads.sh with the other Go programs)
    let go = common::workspace_root().join("target/guest-threads/go_exec");
    if go.is_file() || common::in_ci() {
        let c = Case::new("Go os/exec", go).args([bb]).expect_status(0);
        v.push(with_env(c, env));
    }
    v
}

#[test]
fn c_programs_match_qemu() {
    const TEST: &str = "c_programs_match_qemu";
    let Some(env) = setup(TEST, true) else { return };
    let Some(dir) = c_programs(TEST) else { return };
    common::run_suite("processes-c", c_cases(&env, &dir));
}

/// A signal armada was started with ignored stays ignored in the guest, as Linux keeps
/// SIG_IGN across `execve` and qemu-aarch64 passes it on (`nohup armada run ...`): the
/// children of `wait_status signals` that raise SIGHUP go on and exit 99, under both.
#[test]
fn signals_the_parent_ignored_stay_ignored() {
    use std::os::unix::process::CommandExt;
    const TEST: &str = "signals_the_parent_ignored_stay_ignored";
    let Some(_env) = setup(TEST, true) else {
        return;
    };
    let Some(dir) = c_programs(TEST) else { return };
    let prog = dir.join("wait_status");
    let run = |mut cmd: std::process::Command| -> String {
        // SAFETY: only sets a signal's disposition in the child before it executes.
        unsafe {
            cmd.pre_exec(|| {
                libc::signal(libc::SIGHUP, libc::SIG_IGN);
                Ok(())
            })
        };
        let out = cmd.output().expect("runs");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let mut q = std::process::Command::new(common::qemu_bin());
    q.arg(&prog).arg("signals");
    let mut a = std::process::Command::new(common::armada_bin());
    a.args(["run", "-U", "ARMADA_TIER"])
        .arg(&prog)
        .arg("signals");
    let (q, a) = (run(q), run(a));
    assert_eq!(a, q, "armada's output against qemu-aarch64's");
    assert!(
        a.lines()
            .any(|l| l.starts_with("raise(SIGHUP)") && l.contains("exited 99")),
        "SIGHUP was not ignored:\n{a}"
    );
}

// ---------------------------------------------------------------------------------------
// python3 and perl through the sysroot

const PYTHON_SUBPROCESS: &str = r#"
import os, subprocess, sys
bb, echo = sys.argv[1], sys.argv[2]
r = subprocess.run([bb, 'echo', 'hi'], capture_output=True)
print('busybox echo:', r.returncode, r.stdout, r.stderr)
r = subprocess.run([echo, 'dynamic', 'echo'], capture_output=True)
print('sysroot echo:', r.returncode, r.stdout)
r = subprocess.run([bb, 'tr', 'a-z', 'A-Z'], input=b'through stdin\n', capture_output=True)
print('stdin to tr:', r.returncode, r.stdout)
r = subprocess.run([bb, 'sh', '-c', 'echo err >&2; exit 3'], capture_output=True)
print('exit 3:', r.returncode, r.stdout, r.stderr)
r = subprocess.run([bb, 'sh', '-c', 'kill -TERM $$'])
print('killed by SIGTERM:', r.returncode)
r = subprocess.run(['sh', '-c', 'echo "$0 found through PATH, FOO=$FOO"'], env={'PATH': os.environ['PATH'], 'FOO': 'bar'}, capture_output=True)
print('PATH lookup, env:', r.stdout)
try:
    subprocess.run(['/nonexistent/program'])
except FileNotFoundError as e:
    print('missing program: FileNotFoundError', e.errno)
try:
    subprocess.run(['.'])
except PermissionError as e:
    print('directory: PermissionError', e.errno)
out = subprocess.check_output([bb, 'seq', '3'], text=True)
print('check_output:', out.split())
try:
    subprocess.check_call([bb, 'false'])
except subprocess.CalledProcessError as e:
    print('check_call false: CalledProcessError', e.returncode)
p1 = subprocess.Popen([bb, 'seq', '1', '1000'], stdout=subprocess.PIPE)
p2 = subprocess.Popen([bb, 'wc', '-l'], stdin=p1.stdout, stdout=subprocess.PIPE)
p1.stdout.close()
print('Popen pipeline:', p2.communicate()[0].strip(), p1.wait(), p2.returncode)
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    os.close(r)
    os.write(w, b'from the forked child')
    os._exit(7)
os.close(w)
data = os.read(r, 100)
_, st = os.waitpid(pid, 0)
print('os.fork:', data, os.WIFEXITED(st), os.WEXITSTATUS(st), pid > 0)
print('getppid in a child:', subprocess.run([bb, 'sh', '-c', 'echo $PPID'], capture_output=True, text=True).stdout.strip() == str(os.getpid()))
"#;

const PERL_SYSTEM: &str = r#"
my ($bb, $echo) = @ARGV;
$| = 1;
system($bb, 'echo', 'from system');
print "system status: ", $? >> 8, "\n";
system($bb, 'sh', '-c', 'exit 5');
print "exit 5: ", $? >> 8, "\n";
system($bb, 'sh', '-c', 'kill -TERM $$');
print "signal: ", $? & 127, "\n";
my $out = `$bb echo back ticks`;
print "backticks: $out";
my @lines = `$echo one`;
print "sysroot echo through backticks: @lines";
print "backticks status: ", $? >> 8, "\n";
open(my $fh, '-|', $bb, 'seq', '3') or die "open: $!";
my @got = <$fh>;
close($fh);
chomp @got;
print "open -|: @got, close status $?\n";
open(my $to, '|-', $bb, 'tr', 'a-z', 'A-Z') or die "open: $!";
print $to "piped to tr\n";
close($to);
my $pid = fork();
if ($pid == 0) { exec($bb, 'sh', '-c', 'exit 9') or die "exec: $!"; }
waitpid($pid, 0);
print "fork+exec+waitpid: ", $? >> 8, "\n";
my $r = system('/nonexistent/program');
print "missing program: $r ", ($! ? 'errno set' : 'no errno'), "\n";
"#;

fn script_cases(env: &Env, sysroot: &Path) -> Vec<Case> {
    let echo = sysroot.join("usr/bin/echo");
    let mk = |name: &str, prog: &str, code: &str| {
        let c = Case::new(name.to_string(), sysroot.join(prog))
            .arg(if prog.ends_with("perl") { "-e" } else { "-c" })
            .arg(code)
            .arg(&env.busybox)
            .arg(&echo)
            .sysroot(sysroot)
            .env("QEMU_LD_PREFIX", sysroot)
            .expect_status(0);
        with_env(c, env)
    };
    vec![
        mk("python3 subprocess", "usr/bin/python3", PYTHON_SUBPROCESS),
        mk("perl system and backticks", "usr/bin/perl", PERL_SYSTEM),
    ]
}

#[test]
fn python_perl_match_qemu() {
    const TEST: &str = "python_perl_match_qemu";
    let Some(env) = setup(TEST, true) else { return };
    let sysroot = match common::debian_sysroot(&["usr/bin/python3", "usr/bin/perl", "usr/bin/echo"])
    {
        Ok(d) => d,
        Err(e) => {
            common::unavailable(TEST, &e);
            return;
        }
    };
    common::run_suite("processes-python-perl", script_cases(&env, &sysroot));
}

// ---------------------------------------------------------------------------------------
// armada only

type Check = Box<dyn Fn(&RunOutput) -> Vec<String> + Send + Sync>;

/// One armada-only run: `armada run ARMADA_ARGS... PROGRAM ARGS...` in a fresh directory,
/// then `check` lists what is wrong with the result.
struct Solo {
    name: String,
    program: PathBuf,
    args: Vec<OsString>,
    armada_args: Vec<OsString>,
    files: Vec<(String, Vec<u8>)>,
    env: Vec<(OsString, OsString)>,
    check: Check,
}

fn solo(name: &str, program: impl Into<PathBuf>, args: &[&std::ffi::OsStr], check: Check) -> Solo {
    Solo {
        name: name.to_string(),
        program: program.into(),
        args: args.iter().map(|a| a.to_os_string()).collect(),
        armada_args: Vec::new(),
        files: Vec::new(),
        env: Vec::new(),
        check,
    }
}

/// Exactly this stdout and status (what Linux gives), stderr empty.
fn expect_exact(stdout: &'static str, status: i32) -> Check {
    Box::new(move |o: &RunOutput| {
        let mut p = Vec::new();
        if o.status != status {
            p.push(format!(
                "status {} (want {})",
                o.status_text,
                common::describe_status(status)
            ));
        }
        if let Some(d) = common::first_difference(stdout.as_bytes(), &o.stdout) {
            p.push(format!(
                "stdout is not what Linux prints ('qemu' below is the expected text): {d}"
            ));
        }
        if !o.stderr.is_empty() {
            p.push(format!(
                "unexpected stderr: {:?}",
                common::show_bytes(&o.stderr, 400)
            ));
        }
        p
    })
}

fn run_solo(s: &Solo, env: &Env, dir: &Path) -> Vec<String> {
    if let Err(e) = common::prepare_workdir(dir, &s.files) {
        return vec![format!("cannot prepare {}: {e}", dir.display())];
    }
    let mut cmd = Command::new(common::armada_bin());
    cmd.arg("run")
        .args(common::tier_args())
        .args(&s.armada_args)
        .arg(&s.program)
        .args(&s.args)
        .current_dir(dir)
        .env_clear()
        .envs(common::tier_env());
    for (k, v) in common::base_env(dir) {
        cmd.env(k, v);
    }
    cmd.env("BB", &env.busybox).env("PATH", &env.bin);
    for (k, v) in &s.env {
        cmd.env(k, v);
    }
    let out = match common::run_process(cmd, &[], Duration::from_secs(60)) {
        Ok(o) => o,
        Err(e) => return vec![format!("cannot start armada: {e}")],
    };
    let mut problems = Vec::new();
    if out.timed_out {
        problems.push(format!("armada timed out: {}", out.status_text));
    }
    problems.extend((s.check)(&out));
    if !problems.is_empty() {
        problems.push(format!(
            "armada's stdout: {:?}\n      stderr: {:?}",
            common::show_bytes(&out.stdout, 600),
            common::show_bytes(&out.stderr, 600)
        ));
    }
    let _ = fs::remove_dir_all(dir);
    problems
}

/// Parses "fork failed with E after N children\nreaped M\n" from forkcap.
fn forkcap_result(stdout: &[u8]) -> Option<(String, u32, u32)> {
    let text = String::from_utf8_lossy(stdout);
    let mut lines = text.lines();
    let first = lines.next()?.strip_prefix("fork failed with ")?;
    let (err, rest) = first.split_once(" after ")?;
    let n = rest.strip_suffix(" children")?.parse().ok()?;
    let m = lines.next()?.strip_prefix("reaped ")?.parse().ok()?;
    Some((err.to_string(), n, m))
}

fn solo_cases(env: &Env, dir: &Path) -> Vec<Solo> {
    use std::ffi::OsStr;
    let bb = env.busybox.as_os_str();
    let host_true = Path::new("/bin/true");
    let mut v = vec![
        solo(
            "C: execve of a host x86-64 program is ENOEXEC",
            dir.join("exec_errors"),
            &[OsStr::new("host"), host_true.as_os_str()],
            Box::new(|o: &RunOutput| {
                // the note on stderr names the flag that would run it
                let mut p = expect_exact("host program                       -1 ENOEXEC\n", 0)(
                    &RunOutput {
                        stderr: Vec::new(),
                        ..o.clone()
                    },
                );
                let err = String::from_utf8_lossy(&o.stderr);
                if !err.contains("--host-exec") || err.lines().count() != 1 {
                    p.push(format!(
                        "want one note naming --host-exec on stderr, got {err:?}"
                    ));
                }
                p
            }),
        ),
        solo(
            "bash: running a host x86-64 program fails with 126",
            &env.bash,
            &[
                OsStr::new("-c"),
                OsStr::new("/bin/true; echo \"status $?\""),
            ],
            Box::new(|o: &RunOutput| {
                let mut p = Vec::new();
                if o.status != 0 || o.stdout != b"status 126\n" {
                    p.push(format!(
                        "want stdout \"status 126\" and status 0, got {:?} and {}",
                        common::show_bytes(&o.stdout, 200),
                        o.status_text
                    ));
                }
                let err = String::from_utf8_lossy(&o.stderr);
                if !err.contains("cannot execute binary file") {
                    p.push("stderr does not say \"cannot execute binary file\"".into());
                }
                p
            }),
        ),
        // busybox sh answers ENOEXEC the POSIX way: it runs the file as a shell script, which
        // fails; what matters is that it fails and the shell goes on.
        solo(
            "busybox sh: running a host x86-64 program fails",
            bb,
            &[
                OsStr::new("sh"),
                OsStr::new("-c"),
                OsStr::new("/bin/true 2>/dev/null; echo \"status $?\""),
            ],
            Box::new(|o: &RunOutput| {
                let text = String::from_utf8_lossy(&o.stdout).into_owned();
                let st: Option<i32> = text
                    .trim()
                    .strip_prefix("status ")
                    .and_then(|s| s.parse().ok());
                if o.status == 0 && st.is_some_and(|s| s != 0) {
                    Vec::new()
                } else {
                    vec![format!(
                        "want \"status N\" with N != 0 and exit 0, got {:?} and {}",
                        text, o.status_text
                    )]
                }
            }),
        ),
        solo(
            "SA_NOCLDWAIT (qemu ignores it)",
            dir.join("sigchld"),
            &[OsStr::new("nocldwait")],
            expect_exact("SA_NOCLDWAIT: handler ran 1, waitpid: -1 ECHILD\n", 0),
        ),
        solo(
            "PR_SET_CHILD_SUBREAPER (EINVAL under qemu)",
            dir.join("getppid"),
            &[OsStr::new("subreaper")],
            expect_exact(
                "middle child: exited 0\n\
                 orphan's getppid changed: 1; positive: 1\n\
                 re-parented to the subreaper: 1\n\
                 subreaper reaped the orphan: 1, exited 5\n",
                0,
            ),
        ),
        solo(
            "posix_spawn of a missing file is ENOENT (qemu says 0)",
            dir.join("spawn"),
            &[bb, OsStr::new("missing")],
            expect_exact(
                "posix_spawn of a missing file: ENOENT\n\
                 posix_spawnp of a missing name: ENOENT\n\
                 posix_spawn of a directory: EACCES\n",
                0,
            ),
        ),
        solo(
            "execveat (ENOSYS under qemu)",
            dir.join("exec_errors"),
            &[OsStr::new("execveat"), bb],
            expect_exact(
                "execveat with a dirfd\n\
                 execveat(dirfd): exited 0\n\
                 execveat of a missing file: -1 ENOENT\n\
                 execveat of a directory: -1 EACCES\n",
                0,
            ),
        ),
    ];
    // fork until it fails under a cap of 16 processes
    let mut cap = solo(
        "--max-processes 16: fork fails with EAGAIN, armada ends cleanly",
        dir.join("forkcap"),
        &[],
        Box::new(|o: &RunOutput| {
            match forkcap_result(&o.stdout) {
            Some((e, n, m)) if e == "EAGAIN" && (1..16).contains(&n) && m == n && o.status == 0 => {
                Vec::new()
            }
            r => vec![format!(
                "want \"fork failed with EAGAIN after N children\" (0 < N < 16), \"reaped N\" and status 0; got {r:?}, {}",
                o.status_text
            )],
        }
        }),
    );
    cap.armada_args = vec!["--max-processes".into(), "16".into()];
    v.push(cap);
    // a fork bomb in a subshell: it forks sleepers until fork fails, then the subshell dies
    // of its "can't fork" and the main shell goes on
    let mut bomb = solo(
        "--max-processes 20: fork bomb in a subshell",
        bb,
        &[
            OsStr::new("sh"),
            OsStr::new("-c"),
            OsStr::new(
                r#"( while :; do "$BB" sleep 1 & done ) 2>err.txt
echo "subshell status $?"
read -r line < err.txt; echo "$line""#,
            ),
        ],
        Box::new(|o: &RunOutput| {
            let text = String::from_utf8_lossy(&o.stdout).into_owned();
            let mut lines = text.lines();
            let st = lines
                .next()
                .and_then(|l| l.strip_prefix("subshell status "));
            let err = lines.next().unwrap_or("");
            if o.status == 0 && st.is_some_and(|s| s != "0") && err.contains("fork") {
                Vec::new()
            } else {
                vec![format!(
                    "want \"subshell status N\" (N != 0), a \"can't fork\" line and status 0; got {text:?}, {}",
                    o.status_text
                )]
            }
        }),
    );
    bomb.armada_args = vec!["--max-processes".into(), "20".into()];
    v.push(bomb);
    v
}

/// Forking lanes on the CUDA simulator, with a page table that starts at 64 slots
/// (`ARMADA_GPU_PT_SLOTS`): the threads that service the lanes find no room for a forked
/// child's entries (its parent's, shared copy on write) and leave the child to the serial
/// path, which grows the table first. Every lane must be identical to the CPU engine
/// (`--check`: exit, output, instructions). Armada only: it compares two of armada's engines.
#[test]
fn forks_on_the_gpu_simulator_with_a_table_that_grows() {
    const TEST: &str = "forks_on_the_gpu_simulator_with_a_table_that_grows";
    let Some(dir) = c_programs(TEST) else { return };
    let mut cmd = Command::new(common::armada_bin());
    cmd.args([
        "batch",
        "--backend",
        "cuda",
        "--check",
        "--no-progress",
        "--lanes",
        "4",
    ])
    .arg(dir.join("fork_big"))
    .args(["2", "3"])
    .env("ARMADA_CUDA_SIM", "1")
    .env("ARMADA_GPU_PT_SLOTS", "64");
    let o = common::run_process(cmd, b"", Duration::from_secs(300)).expect("armada runs");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.timed_out, "{TEST}: armada batch timed out\n{err}");
    assert_eq!(o.status, 0, "{TEST}: {}\n{err}", o.status_text);
    assert!(
        err.contains("check: 4 of 4 lanes identical"),
        "{TEST}: not every lane matched the CPU engine:\n{err}"
    );
    let grows = err
        .split("page-table slots: ")
        .nth(1)
        .and_then(|r| r.split('(').nth(1))
        .and_then(|r| r.split(' ').next())
        .and_then(|n| n.parse::<u32>().ok());
    assert!(
        grows.is_some_and(|g| g > 0),
        "{TEST}: the page table did not grow (the case tests nothing):\n{err}"
    );
}

#[test]
fn armada_only_checks() {
    const TEST: &str = "armada_only_checks";
    let Some(env) = setup(TEST, false) else {
        return;
    };
    let Some(dir) = c_programs(TEST) else { return };
    let cases = solo_cases(&env, &dir);
    let only = std::env::var("ARMADA_TEST_FILTER").unwrap_or_default();
    let skip = std::env::var("ARMADA_TEST_SKIP").unwrap_or_default();
    let list = |s: &str| -> Vec<String> {
        s.split(',')
            .map(|x| x.trim().to_string())
            .filter(|x| !x.is_empty())
            .collect()
    };
    let (only, skip) = (list(&only), list(&skip));
    let base = std::env::temp_dir().join(format!("armada-processes-solo-{}", std::process::id()));
    let mut failures = Vec::new();
    let mut ran = 0;
    for (i, s) in cases.iter().enumerate() {
        if (!only.is_empty() && !only.iter().any(|f| s.name.contains(f.as_str())))
            || skip.iter().any(|f| s.name.contains(f.as_str()))
        {
            continue;
        }
        ran += 1;
        let problems = run_solo(s, &env, &base.join(format!("{i:02}")));
        if problems.is_empty() {
            eprintln!("ok      {}", s.name);
        } else {
            eprintln!("FAILED  {}", s.name);
            let mut r = format!("=== FAILED (armada only): {} ===\n", s.name);
            for p in problems {
                let _ = writeln!(r, "  - {p}");
            }
            failures.push(r);
        }
    }
    let _ = fs::remove_dir_all(&base);
    eprintln!(
        "processes-armada-only: {} passed, {} failed",
        ran - failures.len(),
        failures.len()
    );
    if !failures.is_empty() {
        for f in &failures {
            eprintln!("\n{f}");
        }
        panic!("{TEST}: {} of {ran} checks failed", failures.len());
    }
}
