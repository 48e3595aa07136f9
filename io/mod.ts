/**
 * The io room: readers and writers of every file the tool chain touches
 * (SQuAD, Python-json, NDJSON, npy/npz/zip, predictions), the Matrix type,
 * atomic writes, PI-SQuAD dumps (`io/dump/`: names, reader, writer, the
 * one set of dump checks and `validate`), and the readers of other question
 * sets and corpora (`io/datasets/`: MRQA, DPR, NQ-open, TriviaQA-open,
 * CuratedTREC, XQuAD/MLQA, generic JSONL/CSV; one `QaRecord` type, a format
 * detector). It imports no other room.
 *
 * @example
 * ```ts
 * import { dumpStem, pyStringLiteral } from "./mod.ts";
 * if (dumpStem("AC/DC_3") !== "AC_DC_3") throw new Error("stem");
 * if (pyStringLiteral("é") !== '"\\u00e9"') throw new Error("literal");
 * ```
 *
 * @module
 */
export { FileError, InputError, UsageError } from "./errors.ts";
export type { CsrMatrix, DenseMatrix, Matrix } from "./matrix.ts";
export {
  KEY_ORDER,
  objectKeys,
  parsePythonJson,
  pyDumps,
  pyFloatRepr,
  pyNumberText,
  pyStringLiteral,
  RawNumber,
  setKey,
  writeValue,
} from "./pyjson.ts";
export type { PyJson, PyObject } from "./pyjson.ts";
export { firstInvalidUtf8, JsonEventDecoder, JsonSyntaxError } from "./json_events.ts";
export type { JsonEvent } from "./json_events.ts";
export { gunzipIfNeeded, openSource, peekBytes, readTextMaybeGzip } from "./source.ts";
export type { ByteSource } from "./source.ts";
export {
  openAtomicWriter,
  removeStaleTemps,
  writeFileAtomic,
  writeTextAtomically,
  writeTextFileAtomic,
} from "./fs.ts";
export type { AtomicWriter } from "./fs.ts";
export {
  countSquad,
  decodeArticle,
  squadArticles,
  squadParagraphs,
  squadQuestions,
  squadRecords,
  squadRecordStream,
} from "./squad.ts";
export type {
  SquadAnswer,
  SquadArticle,
  SquadCounts,
  SquadDataMark,
  SquadField,
  SquadParagraph,
  SquadQuestion,
  SquadReadError,
  SquadReadOptions,
  SquadRecord,
} from "./squad.ts";
export {
  DatasetIds,
  type IdMode,
  type IdProblem,
  isIdProblem,
  squadQuestionParagraphs,
  WHOLE_DATASET_LIMIT,
} from "./squad_ids.ts";
export { contextArticle, omitKeys, questionArticle, SquadJsonWriter } from "./squad_writer.ts";
export { parsePredictions, readPredictions } from "./predictions.ts";
export {
  detectPredFormat,
  type HarnessAnswers,
  lmEvalAnswers,
  openCompassAnswers,
  parsePredFormat,
  PRED_FORMATS,
  type PredFormat,
  predFormatOfHead,
  readHarnessAnswers,
  type SetQuestion,
} from "./predictions_harness.ts";
export {
  predictionsText,
  type ResolvedPredictions,
  type ResolveOptions as PredictionResolveOptions,
  resolvePredictions,
  setQuestions,
} from "./predictions_match.ts";
export { isDataPath, parquetFiles, parquetInput } from "./datasets/parquet_path.ts";
export { type ParquetKind, parquetKind, parquetSource } from "./datasets/parquet.ts";
export {
  openParquet,
  PARQUET_MAGIC,
  type ParquetFile,
  readRowGroup,
} from "./datasets/parquet_file.ts";
export {
  decodeRecord,
  ndjsonRecords,
  readNdjson,
  type RecordTypes,
  sniffNdjson,
} from "./ndjson.ts";
export { RecordSchemas } from "./ndjson_schema.ts";
export type { ParagraphRecord, QuestionRecord } from "./ndjson.ts";
export {
  asFloat64,
  bytesArray,
  descrOf,
  encodeNpy,
  ndarray,
  NpyError,
  npyPreamble,
  parseNpy,
  readNpy,
  stringsOf,
  toJsonValues,
  writeNpy,
} from "./npy.ts";
export type {
  ByteOrder,
  Dtype,
  EncodeNpyOptions,
  JsonValue,
  NdArray,
  NdData,
  NumericDtype,
  ParseNpyOptions,
} from "./npy.ts";
export {
  encodeNpz,
  encodeSparseNpz,
  NpzError,
  parseNpz,
  parseNpzContent,
  parseSparseNpz,
  readNpz,
  readNpzContent,
  readSparseNpz,
  sparseToDense,
  writeNpz,
  writeSparseNpz,
} from "./npz.ts";
export type {
  CompressedSparseMatrix,
  CooSparseMatrix,
  NpzContent,
  NpzEntries,
  NpzFileWriteOptions,
  NpzReadOptions,
  NpzWriteOptions,
  SparseMatrix,
} from "./npz.ts";
export type { NpyHeader } from "./npy_format.ts";
export {
  checkEntryName,
  DEFAULT_MAX_ENTRY_SIZE,
  DEFAULT_MAX_RATIO,
  encodeZip,
  extractZipEntry,
  isZip,
  readCentralDirectory,
  readZipDirectory,
  readZipEnd,
  unzip,
  ZipError,
} from "./zip.ts";
export type {
  CentralEntry,
  ZipCodec,
  ZipEnd,
  ZipEntry,
  ZipInput,
  ZipLimits,
  ZipWriteOptions,
} from "./zip.ts";
export {
  crcMessage,
  inflateChecked,
  NATIVE,
  nativeCrc32,
  openZipIndex,
  ZipFileIndex,
} from "./zip_file.ts";
export type { IndexedEntry } from "./zip_file.ts";
export { describeArray, describeNpz, inspectFile } from "./inspect.ts";
export type { ArrayInfo, InspectOptions, InspectResult, SparseInfo } from "./inspect.ts";
export {
  dumpStem,
  type IdKind,
  MAX_QUESTION_STEM_BYTES,
  MAX_STEM_BYTES,
  maxStemBytes,
  StemRegistry,
  unsafeIdReason,
} from "./dump/names.ts";
export { indexPhrases, parsePhrases } from "./dump/phrases.ts";
export type { PhraseList } from "./dump/phrases.ts";
export {
  checkDenseF32,
  checkHalf,
  contextWords,
  isQuestionShape,
  rowOfNonFinite,
  rowsMatchPhrases,
  sameDim,
  shapeText,
  sumSquaresF32,
  toFloat32,
  toInt32,
} from "./dump/checks.ts";
export { decodeDumpMatrix } from "./dump/decode.ts";
export type { DecodedMatrix, DecodeOptions } from "./dump/decode.ts";
export { asDumpError, openDumpSync } from "./dump/reader_sync.ts";
export type {
  ContextDump,
  DumpError,
  DumpOptions,
  DumpSourceSync,
  MissingFile,
} from "./dump/reader_sync.ts";
export { openDump } from "./dump/reader.ts";
export type { DumpSource } from "./dump/reader.ts";
export {
  contextDumpComplete,
  encodeMatrix,
  metadataJson,
  phrasesJson,
  questionDumpComplete,
  writeContextDump,
  writeQuestionDump,
} from "./dump/writer.ts";
export type { DumpContext, DumpFormat, DumpPhrase, DumpQuestion } from "./dump/writer.ts";
export { formatValidateReport, validate } from "./dump/validate.ts";
export type { ValidateOptions, ValidateReport } from "./dump/validate.ts";
export { split } from "./squad_split.ts";
export type { SplitOptions, SplitResult } from "./squad_split.ts";
export { parseArticleRange, writeArticleSubset } from "./squad_subset.ts";
export type { SubsetOptions } from "./squad_subset.ts";
export { records } from "./records.ts";
export type { RecordsError, RecordsOptions } from "./records.ts";
export {
  isSquadShaped,
  openDataset,
  passagesOfSource,
  questionsOfSource,
  readCorpus,
  readQuestions,
  settleFormat,
} from "./datasets/read.ts";
export type { DatasetOptions } from "./datasets/read.ts";
export {
  CORPUS_ONLY_FORMATS,
  detectFormat,
  formatOfHead,
  HEAD_BYTES,
  PARAGRAPH_FORMATS,
  parseFormatName,
  QUESTION_FORMATS,
  sniffFormat,
} from "./datasets/detect.ts";
export type { DatasetFormat } from "./datasets/detect.ts";
export {
  allFormats,
  BUILTIN_FORMATS,
  DATASET_KINDS,
  formatsOfKind,
  formatSpec,
  hasSquadRules,
  kindOfFormat,
  lookupFormat,
  registerFormat,
  rulesOfKind,
} from "./datasets/formats.ts";
export type {
  BuiltinFormat,
  DatasetKind,
  FormatSpec,
  PassageReader,
  QuestionReader,
  ReaderContext,
  RulesName,
} from "./datasets/formats.ts";
export { MAX_LINE_BYTES } from "./datasets/types.ts";
export type {
  CorpusPassage,
  DatasetReadError,
  FieldMap,
  QaReadOptions,
  QaRecord,
} from "./datasets/types.ts";
export { langFromFileName, squadPassages, squadQuestionRecords } from "./datasets/squad.ts";
export { mrqaPassages, mrqaQuestions } from "./datasets/mrqa.ts";
export { dprPassages, dprQuestions } from "./datasets/dpr.ts";
export type { DprPassageOptions, DprQaOptions } from "./datasets/dpr.ts";
export { openAnswers, openQuestions } from "./datasets/open.ts";
export { csvQuestions, jsonlQuestions } from "./datasets/generic.ts";
export type { GenericReadOptions } from "./datasets/generic.ts";
export { jsonlPassages } from "./datasets/passages.ts";
export { writePassagesOnly, writeQuestionsOnly } from "./datasets/split.ts";
export type { PassagesOnlyOptions, QuestionsOnlyOptions } from "./datasets/split.ts";
export { parsePyStringList, PyLiteralError } from "./pyliteral.ts";
export {
  type FileHash,
  filesSha256,
  flattenJson,
  type FolderHash,
  gitCommit,
  hashFile,
  hashFolder,
  type MachineInfo,
  machineInfo,
  PROVENANCE_FILE,
  PROVENANCE_FORMAT,
  readProvenance,
  recordedPath,
  sha256Folder,
  type ToolInfo,
  toolInfo,
  writeProvenance,
} from "./provenance.ts";
export {
  type Child,
  type CmdOut,
  exitCode,
  runCommand,
  signalChild,
  SpawnError,
  type SpawnOptions,
  spawnScoped,
  stopChild,
} from "./process.ts";
