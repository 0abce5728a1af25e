//! The two front ends: TOML and JSON text to a [`Config`], every error with the path of its
//! field (one `serde_path_to_error` wrapper around either deserializer) and its position.

use std::path::Path;

#[cfg(any(feature = "toml", feature = "json"))]
use crate::error::Location;
use crate::error::{ConfigError, Problem};
use crate::{Config, Format};

/// `serde_path_to_error`'s path as this crate writes paths: `a.b.c`, `[i]` for a list entry.
#[cfg(any(feature = "toml", feature = "json"))]
fn path_text(path: &serde_path_to_error::Path) -> String {
    use serde_path_to_error::Segment;
    let mut out = String::new();
    for segment in path.iter() {
        match segment {
            Segment::Seq { index } => out.push_str(&format!("[{index}]")),
            Segment::Map { key } | Segment::Enum { variant: key } => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(key);
            }
            Segment::Unknown => {}
        }
    }
    out
}

#[cfg(feature = "toml")]
pub(crate) fn toml(text: &str) -> Result<Config, ConfigError> {
    let located = |e: &toml::de::Error| e.span().map(|s| Location::of_offset(text, s.start));
    let document = toml::Deserializer::parse(text).map_err(|e| {
        ConfigError::new("", Problem::Parse(e.message().to_owned())).at(located(&e))
    })?;
    serde_path_to_error::deserialize(document).map_err(|e| {
        let path = path_text(e.path());
        let inner = e.inner();
        ConfigError::new(path, Problem::Parse(inner.message().to_owned())).at(located(inner))
    })
}

#[cfg(feature = "json")]
pub(crate) fn json(text: &str) -> Result<Config, ConfigError> {
    let mut de = serde_json::Deserializer::from_str(text);
    let config: Config = serde_path_to_error::deserialize(&mut de).map_err(|e| json_error(&e))?;
    de.end().map_err(|e| {
        ConfigError::new("", Problem::Parse(json_message(&e))).at(json_location(&e))
    })?;
    Ok(config)
}

#[cfg(feature = "json")]
fn json_error(e: &serde_path_to_error::Error<serde_json::Error>) -> ConfigError {
    let inner = e.inner();
    ConfigError::new(path_text(e.path()), Problem::Parse(json_message(inner)))
        .at(json_location(inner))
}

/// serde_json's message without its own " at line L column C" suffix (the location is kept
/// apart, as for TOML).
#[cfg(feature = "json")]
fn json_message(e: &serde_json::Error) -> String {
    let full = e.to_string();
    let suffix = format!(" at line {} column {}", e.line(), e.column());
    full.strip_suffix(&suffix).unwrap_or(&full).to_owned()
}

#[cfg(feature = "json")]
fn json_location(e: &serde_json::Error) -> Option<Location> {
    (e.line() > 0).then(|| Location {
        line: e.line(),
        column: e.column(),
    })
}

pub(crate) fn path(file: &Path) -> Result<Config, ConfigError> {
    let shown = file.display().to_string();
    let text = std::fs::read_to_string(file)
        .map_err(|e| ConfigError::new("", Problem::Io(format!("cannot read {shown}: {e}"))))?;
    Config::from_text(&text, Format::of_path(file)?)
}
