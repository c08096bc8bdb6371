//! Guest path resolution, optionally confined to a root directory.
//!
//! Confined resolution walks the path one component at a time from the root (or from the
//! guest directory a relative path starts at), the way the kernel does: `.` is skipped, `..`
//! goes up but never above the root, and every existing component is checked with `lstat`;
//! a symlink is read and its target spliced into the remaining components, an absolute target
//! starting again at the root. So no `..`, absolute path or symlink leads outside the root.
//! The host path that comes out has no symlinks in it (at the time of the check); the final
//! component is left unresolved when the caller asks not to follow it (lstat, readlink,
//! unlink, O_NOFOLLOW), and the host call is then made with the matching no-follow flag.
//!
//! A concurrent *host* process that swaps a directory for a symlink between our check and the
//! host call could still redirect one call; armada confines its guests, it is not a defence
//! against other host processes writing inside the root.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use crate::Errno;

/// The *at syscalls' dirfd for the cwd, and their flags.
pub const AT_FDCWD: i32 = -100;
pub const AT_SYMLINK_NOFOLLOW: i32 = 0x100;
pub const AT_REMOVEDIR: i32 = 0x200;
pub const AT_EACCESS: i32 = 0x200;
pub const AT_SYMLINK_FOLLOW: i32 = 0x400;
pub const AT_NO_AUTOMOUNT: i32 = 0x800;
pub const AT_EMPTY_PATH: i32 = 0x1000;
pub const AT_STATX_SYNC_TYPE: i32 = 0x6000;

/// Most symlinks followed while resolving one path (Linux: 40).
pub const MAX_SYMLINKS: u32 = 40;

/// A path resolved inside the root.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Resolved {
    /// The host path (absolute, inside the root).
    pub host: PathBuf,
    /// The same path as the guest sees it (absolute, normalized, no symlinks except perhaps
    /// the unfollowed final component).
    pub guest: Vec<u8>,
}

fn components(p: &[u8]) -> impl DoubleEndedIterator<Item = &[u8]> {
    p.split(|&c| c == b'/').filter(|c| !c.is_empty())
}

fn join_guest(stack: &[Vec<u8>]) -> Vec<u8> {
    if stack.is_empty() {
        return b"/".to_vec();
    }
    let mut g = Vec::new();
    for c in stack {
        g.push(b'/');
        g.extend_from_slice(c);
    }
    g
}

fn host_of(root: &Path, stack: &[Vec<u8>]) -> PathBuf {
    let mut h = root.to_path_buf();
    for c in stack {
        h.push(OsStr::from_bytes(c));
    }
    h
}

/// Resolves guest path `path` inside host directory `root`. Relative paths start at `base`,
/// an absolute, normalized guest directory path (the cwd or a directory fd's path). The final
/// component is resolved only if `follow_final` (a trailing slash forces it).
pub fn resolve_in_root(
    root: &Path,
    base: &[u8],
    path: &[u8],
    follow_final: bool,
) -> Result<Resolved, Errno> {
    if path.is_empty() {
        return Err(Errno::ENOENT);
    }
    let mut stack: Vec<Vec<u8>> = if path.first() == Some(&b'/') {
        Vec::new()
    } else {
        components(base)
            .filter(|c| *c != b"." && *c != b"..")
            .map(|c| c.to_vec())
            .collect()
    };
    let trailing_slash = path.last() == Some(&b'/');
    let follow_final = follow_final || trailing_slash;
    // pending components, front first (reversed so that pop() takes the next one)
    let mut pending: Vec<Vec<u8>> = components(path).rev().map(|c| c.to_vec()).collect();
    let mut links = 0u32;
    while let Some(c) = pending.pop() {
        if c == b"." {
            continue;
        }
        if c == b".." {
            stack.pop();
            continue;
        }
        let last = pending.is_empty();
        stack.push(c);
        if last && !follow_final {
            break;
        }
        let host = host_of(root, &stack);
        match std::fs::symlink_metadata(&host) {
            Err(e) => {
                let err = Errno::from_io(&e);
                if last && err == Errno::ENOENT {
                    break; // may be created by the caller
                }
                return Err(err);
            }
            Ok(md) if md.file_type().is_symlink() => {
                links += 1;
                if links > MAX_SYMLINKS {
                    return Err(Errno::ELOOP);
                }
                let target = std::fs::read_link(&host).map_err(|e| Errno::from_io(&e))?;
                let target = target.as_os_str().as_bytes();
                stack.pop();
                if target.first() == Some(&b'/') {
                    stack.clear();
                }
                if target.is_empty() {
                    return Err(Errno::ENOENT);
                }
                for t in components(target).rev() {
                    pending.push(t.to_vec());
                }
            }
            Ok(md) => {
                if !last && !md.is_dir() {
                    return Err(Errno::ENOTDIR);
                }
            }
        }
    }
    let mut host = host_of(root, &stack);
    if trailing_slash && !stack.is_empty() {
        // let the host check that the final component is a directory
        let mut s = host.into_os_string();
        s.push("/");
        host = PathBuf::from(s);
    }
    Ok(Resolved {
        host,
        guest: join_guest(&stack),
    })
}

/// qemu-user's `-L PREFIX` lookup: an absolute guest path names `PREFIX/path` when that
/// exists on the host (following symlinks, as qemu's `access(F_OK)` does), and the host's own
/// `path` otherwise. Relative paths are not looked up.
pub fn under_prefix(prefix: &Path, path: &[u8]) -> Option<PathBuf> {
    if path.first() != Some(&b'/') {
        return None;
    }
    // the root itself is the host's, as qemu-user's -L has it: `chdir("/")` must not
    // take the guest into the prefix, whose host path would then show in getcwd
    components(path).next()?;
    let mut full = prefix.as_os_str().as_bytes().to_vec();
    full.extend_from_slice(path);
    let full = PathBuf::from(OsStr::from_bytes(&full));
    full.exists().then_some(full)
}

/// Lexical normalization of an absolute guest path (no symlink lookups): for recognizing
/// special paths such as `/proc/self/exe`.
pub fn normalize_lexically(base: &[u8], path: &[u8]) -> Vec<u8> {
    let mut stack: Vec<&[u8]> = Vec::new();
    let start: Vec<&[u8]> = if path.first() == Some(&b'/') {
        Vec::new()
    } else {
        components(base).collect()
    };
    for c in start.into_iter().chain(components(path)) {
        match c {
            b"." => {}
            b".." => {
                stack.pop();
            }
            c => stack.push(c),
        }
    }
    if stack.is_empty() {
        return b"/".to_vec();
    }
    let mut out = Vec::new();
    for c in stack {
        out.push(b'/');
        out.extend_from_slice(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tests::tempdir;
    use std::os::unix::fs::symlink;

    #[test]
    fn confinement() {
        let g = tempdir("root");
        let outer = g.0.clone();
        let root = outer.join("root");
        std::fs::create_dir_all(root.join("etc")).unwrap();
        std::fs::create_dir_all(root.join("a/b")).unwrap();
        std::fs::write(root.join("etc/passwd"), b"inside").unwrap();
        std::fs::write(outer.join("secret"), b"outside").unwrap();
        symlink("/etc/passwd", root.join("abs")).unwrap();
        symlink("../../../../../../secret", root.join("a/up")).unwrap();
        symlink(outer.join("secret"), root.join("hostabs")).unwrap();
        symlink("b/../..", root.join("a/rel")).unwrap();
        symlink("loop2", root.join("loop1")).unwrap();
        symlink("loop1", root.join("loop2")).unwrap();
        symlink("/", root.join("a/b/toroot")).unwrap();
        std::fs::write(root.join("secret"), b"decoy").unwrap();

        let r = |base: &[u8], p: &[u8], follow: bool| resolve_in_root(&root, base, p, follow);

        // .. never goes above the root
        let x = r(b"/", b"../../../../etc/passwd", true).unwrap();
        assert_eq!(x.host, root.join("etc/passwd"));
        assert_eq!(x.guest, b"/etc/passwd");
        let x = r(b"/a/b", b"../../../..", true).unwrap();
        assert_eq!(x.host, root);
        assert_eq!(x.guest, b"/");
        // absolute paths start at the root
        let x = r(b"/a", b"/etc/passwd", true).unwrap();
        assert_eq!(std::fs::read(&x.host).unwrap(), b"inside");
        // absolute symlink targets are inside the root
        let x = r(b"/", b"abs", true).unwrap();
        assert_eq!(x.host, root.join("etc/passwd"));
        // a relative symlink with many .. stays inside
        let x = r(b"/", b"a/up", true).unwrap();
        assert_eq!(x.host, root.join("secret"));
        assert_eq!(std::fs::read(&x.host).unwrap(), b"decoy");
        // a symlink to an absolute host path resolves inside the root (where it is missing)
        assert_eq!(r(b"/", b"hostabs", true), Err(Errno::ENOENT));
        // symlink in the middle
        let x = r(b"/", b"a/rel/etc/passwd", true).unwrap();
        assert_eq!(x.host, root.join("etc/passwd"));
        let x = r(b"/", b"a/b/toroot/../../etc", true).unwrap();
        assert_eq!(x.host, root.join("etc"));
        // not following the final component
        let x = r(b"/", b"abs", false).unwrap();
        assert_eq!(x.host, root.join("abs"));
        // loops
        assert_eq!(r(b"/", b"loop1", true), Err(Errno::ELOOP));
        // missing intermediate / final
        assert_eq!(r(b"/", b"nope/x", true), Err(Errno::ENOENT));
        let x = r(b"/", b"etc/newfile", true).unwrap();
        assert_eq!(x.host, root.join("etc/newfile"));
        // file used as a directory
        assert_eq!(r(b"/", b"etc/passwd/x", true), Err(Errno::ENOTDIR));
        assert_eq!(r(b"/", b"", true), Err(Errno::ENOENT));
        // relative to a base
        let x = r(b"/a/b", b"../../etc/passwd", true).unwrap();
        assert_eq!(x.host, root.join("etc/passwd"));
        // a bogus base with .. cannot escape either
        let x = r(b"/../../..", b"x", true).unwrap();
        assert_eq!(x.host, root.join("x"));
    }

    #[test]
    fn prefix_lookup() {
        let g = tempdir("prefix");
        let dir = g.0.clone();
        std::fs::create_dir_all(dir.join("lib")).unwrap();
        std::fs::write(dir.join("lib/ld.so"), b"x").unwrap();
        assert_eq!(
            under_prefix(&dir, b"/lib/ld.so"),
            Some(dir.join("lib/ld.so"))
        );
        assert_eq!(under_prefix(&dir, b"/lib/none.so"), None);
        assert_eq!(under_prefix(&dir, b"lib/ld.so"), None);
        // the root is the host's: chdir("/") under -L stays out of the prefix
        assert_eq!(under_prefix(&dir, b"/"), None);
        assert_eq!(under_prefix(&dir, b"//"), None);
    }

    #[test]
    fn lexical() {
        assert_eq!(
            normalize_lexically(b"/", b"/proc/../proc/self/exe"),
            b"/proc/self/exe"
        );
        assert_eq!(
            normalize_lexically(b"/proc", b"self//exe"),
            b"/proc/self/exe"
        );
        assert_eq!(normalize_lexically(b"/", b"../.."), b"/");
    }
}
