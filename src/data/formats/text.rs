//! Text: any file of bytes (byte-level: every byte is a token, vocabulary 256) and token files
//! of the nanoGPT kind (little-endian u16 or u32 ids, no header, a declared vocabulary size):
//! `format = "bytes"` and `format = "tokens"` (with `dtype` and `vocab`), a file or a list of
//! files read one after the other.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::{
    format_err, need, problem, Decoded, Decoder, Files, FormatDef, Hostile, PartShape, Sample,
};
use crate::data::spec::{DatasetSpec, Part, SpecProblem, MAX_VOCAB};
use crate::data::{DataError, BYTE_VOCAB};

/// The width of a token id (`dtype = "u16" | "u32"`).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[serde(rename_all = "kebab-case")]
pub enum TokenType {
    U16,
    U32,
}

impl TokenType {
    pub fn bytes(self) -> usize {
        match self {
            TokenType::U16 => 2,
            TokenType::U32 => 4,
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            TokenType::U16 => "u16",
            TokenType::U32 => "u32",
        }
    }
}

pub const BYTES: FormatDef = FormatDef {
    name: "bytes",
    part: PartShape::Files,
    train: "\"input.txt\"",
    keys: &[],
    keys_doc: "",
    notes: "a file or a list (read as one text); byte-level text, vocabulary 256",
    decoder: |_| Ok(Decoder::Bytes),
    sample: sample_bytes,
    hostile: hostile_bytes,
};

pub const TOKENS: FormatDef = FormatDef {
    name: "tokens",
    part: PartShape::Files,
    train: "\"train.bin\"",
    keys: &["dtype", "vocab"],
    keys_doc: "`dtype = \"u16\" \\| \"u32\"`, `vocab`",
    notes: "a file or a list; little-endian ids without a header (nanoGPT's `prepare.py` output)",
    decoder: tokens_decoder,
    sample: sample_tokens,
    hostile: hostile_tokens,
};

fn tokens_decoder(spec: &DatasetSpec) -> Result<Decoder, SpecProblem> {
    let f = TOKENS.name;
    let dtype = spec
        .dtype
        .ok_or_else(|| need(f, "dtype", "\"u16\" or \"u32\" (the width of a token id)"))?;
    let vocab = spec
        .vocab
        .ok_or_else(|| need(f, "vocab", "the vocabulary size (every id is below it)"))?;
    let max = match dtype {
        TokenType::U16 => 1 << 16,
        TokenType::U32 => MAX_VOCAB,
    };
    if !(2..=max).contains(&vocab) {
        return Err(problem(
            "vocab",
            format!("vocab = {vocab}: give 2 to {max} for {} ids", dtype.name()),
        ));
    }
    Ok(Decoder::Tokens { dtype, vocab })
}

/// A part's files as one byte-level text.
pub fn read_bytes(part: &Part, files: &mut dyn Files) -> Result<Decoded, DataError> {
    let mut all = vec![];
    for n in super::file_names(part) {
        let (p, b) = files.read(n)?;
        all.extend(bytes(&p, &b)?);
    }
    Ok(Decoded::Text(all, BYTE_VOCAB))
}

/// A part's files as one stream of token ids.
pub fn read_tokens(
    part: &Part,
    files: &mut dyn Files,
    dtype: TokenType,
    vocab: usize,
) -> Result<Decoded, DataError> {
    let mut all = vec![];
    for n in super::file_names(part) {
        let (p, b) = files.read(n)?;
        all.extend(tokens(&p, &b, dtype, vocab)?);
    }
    Ok(Decoded::Text(all, vocab))
}

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
                dtype.name()
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

/// 2,000 bytes of text in two files.
fn sample_bytes() -> Sample {
    let text: Vec<u8> = "the quick brown fox jumps over the lazy dog. "
        .bytes()
        .cycle()
        .take(2000)
        .collect();
    Sample {
        files: vec![
            ("input-1.txt".into(), text[..1200].to_vec()),
            ("input-2.txt".into(), text[1200..].to_vec()),
        ],
        table: "format = \"bytes\"\ntrain = [\"input-1.txt\", \"input-2.txt\"]".into(),
    }
}

fn hostile_bytes() -> Vec<Hostile> {
    use std::io::Write;
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(b"").expect("writing to memory");
    let empty_gz = gz.finish().expect("writing to memory");
    vec![
        Hostile::file(
            "a .gz that holds nothing",
            vec![("input-2.txt.gz".into(), empty_gz)],
            "input-2.txt.gz",
            &["empty file"],
        )
        .with_table("format = \"bytes\"\ntrain = [\"input-1.txt\", \"input-2.txt.gz\"]"),
        Hostile::file(
            "the second file of a list missing",
            vec![],
            "input-3.txt",
            &["missing", "train[1]"],
        )
        .with_table("format = \"bytes\"\ntrain = [\"input-1.txt\", \"input-3.txt\"]"),
    ]
}

/// u16 ids of a vocabulary of 100 (2,000 tokens).
fn sample_tokens() -> Sample {
    let ids: Vec<u8> = (0..2000u16)
        .flat_map(|i| (i * 7 % 100).to_le_bytes())
        .collect();
    Sample {
        files: vec![("train.bin".into(), ids)],
        table: "format = \"tokens\"\ntrain = \"train.bin\"\ndtype = \"u16\"\nvocab = 100".into(),
    }
}

fn hostile_tokens() -> Vec<Hostile> {
    vec![
        Hostile::file(
            "an odd number of bytes",
            vec![("train.bin".into(), vec![1, 0, 2])],
            "train.bin",
            &["whole number of 2-byte"],
        ),
        Hostile::file(
            "an id outside the vocabulary",
            vec![("train.bin".into(), [1, 0, 200, 0].repeat(100))],
            "train.bin",
            &["id 200", "vocabulary of 100"],
        ),
    ]
}
