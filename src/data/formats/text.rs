//! Text: any file of bytes (byte-level: every byte is a token, vocabulary 256) and token files
//! of the nanoGPT kind (little-endian u16 or u32 ids, no header, a declared vocabulary size).

use std::path::Path;

use super::format_err;
use crate::data::spec::TokenType;
use crate::data::DataError;

/// The bytes of a file as tokens 0…255.
pub fn bytes(path: &Path, b: &[u8]) -> Result<Vec<u32>, DataError> {
    if b.is_empty() {
        return Err(format_err(path, "empty file: no text"));
    }
    Ok(b.iter().map(|&c| c as u32).collect())
}

/// Token ids (each below `vocab`).
pub fn tokens(
    path: &Path,
    b: &[u8],
    dtype: TokenType,
    vocab: usize,
) -> Result<Vec<u32>, DataError> {
    let w = dtype.bytes();
    if b.is_empty() {
        return Err(format_err(path, "empty file: no tokens"));
    }
    if !b.len().is_multiple_of(w) {
        return Err(format_err(
            path,
            format!(
                "{} bytes is not a whole number of {w}-byte token ids (a truncated file, or \
                 dtype is not {})",
                b.len(),
                if w == 2 { "u16" } else { "u32" }
            ),
        ));
    }
    let ids: Vec<u32> = match dtype {
        TokenType::U16 => b
            .chunks_exact(2)
            .map(|c| u16::from_le_bytes([c[0], c[1]]) as u32)
            .collect(),
        TokenType::U32 => b
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect(),
    };
    if let Some(i) = ids.iter().position(|&t| t as usize >= vocab) {
        return Err(format_err(
            path,
            format!(
                "token {i} is id {}, outside the vocabulary of {vocab} (vocab = {vocab}; is dtype \
                 right?)",
                ids[i]
            ),
        ));
    }
    Ok(ids)
}
