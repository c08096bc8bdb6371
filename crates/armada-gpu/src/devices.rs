//! Which of a host's GPUs a batch runs on (`armada batch --devices`, `devices=` in Python).

use crate::Error;
use std::fmt;
use std::str::FromStr;

/// A choice of devices by number, 0 being the first the engine finds.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Devices {
    /// The first device (what a batch has always run on).
    #[default]
    First,
    /// Every device the engine finds.
    All,
    /// These devices, in this order (lanes are split over them in it).
    List(Vec<usize>),
}

impl FromStr for Devices {
    type Err = String;

    /// "all", or numbers separated by commas ("0", "0,2").
    fn from_str(s: &str) -> Result<Devices, String> {
        let t = s.trim();
        if t.eq_ignore_ascii_case("all") {
            return Ok(Devices::All);
        }
        let mut v = Vec::new();
        for part in t.split(',') {
            let n: usize = part.trim().parse().map_err(|_| {
                format!("not a device list: {s:?} (use all, or numbers such as 0 or 0,2)")
            })?;
            if v.contains(&n) {
                return Err(format!("device {n} is named twice in {s:?}"));
            }
            v.push(n);
        }
        Ok(Devices::List(v))
    }
}

impl fmt::Display for Devices {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Devices::First => write!(f, "0"),
            Devices::All => write!(f, "all"),
            Devices::List(v) => {
                let s: Vec<String> = v.iter().map(|n| n.to_string()).collect();
                write!(f, "{}", s.join(","))
            }
        }
    }
}

impl Devices {
    /// The device numbers this choice names on a host with `count` devices of the engine
    /// `engine` ("CUDA"); a number the host lacks is an error that says what it has.
    pub fn select(&self, count: usize, engine: &str) -> Result<Vec<usize>, Error> {
        if count == 0 {
            return Err(Error::NoDevice(format!(
                "the {engine} engine finds no device"
            )));
        }
        match self {
            Devices::First => Ok(vec![0]),
            Devices::All => Ok((0..count).collect()),
            Devices::List(v) => {
                if let Some(bad) = v.iter().find(|&&n| n >= count) {
                    let has = if count == 1 {
                        "1 device (0)".to_string()
                    } else {
                        format!("{count} devices (0 to {})", count - 1)
                    };
                    return Err(Error::NoDevice(format!(
                        "--devices {self}: there is no {engine} device {bad}; this host has {has}: use --devices all, or numbers from that range"
                    )));
                }
                Ok(v.clone())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_and_select() {
        assert_eq!("all".parse::<Devices>(), Ok(Devices::All));
        assert_eq!(" 0, 2".parse::<Devices>(), Ok(Devices::List(vec![0, 2])));
        assert!("0,0".parse::<Devices>().is_err());
        assert!("x".parse::<Devices>().is_err());
        assert!("".parse::<Devices>().is_err());
        assert_eq!(Devices::All.select(3, "CUDA").unwrap(), vec![0, 1, 2]);
        assert_eq!(Devices::First.select(3, "CUDA").unwrap(), vec![0]);
        let e = Devices::List(vec![7]).select(1, "CUDA").unwrap_err();
        assert!(e.to_string().contains("no CUDA device 7"), "{e}");
        assert!(e.to_string().contains("1 device (0)"), "{e}");
        assert!(Devices::All.select(0, "CUDA").is_err());
    }
}
