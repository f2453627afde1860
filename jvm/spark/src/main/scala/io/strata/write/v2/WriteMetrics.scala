package io.strata.write.v2

import org.apache.spark.sql.connector.metric.CustomSumMetric

/** A summed metric of the write node; Spark instantiates each by class name, so each needs a no-arg class. */
abstract class StrataSumMetric(metricName: String, metricDescription: String) extends CustomSumMetric {
  override def name(): String = metricName
  override def description(): String = metricDescription
}
class FilesWrittenMetric extends StrataSumMetric("strataFilesWritten", "number of data files written")
class RowsWrittenMetric extends StrataSumMetric("strataRowsWritten", "number of rows written")
class BytesWrittenMetric extends StrataSumMetric("strataBytesWritten", "bytes of data files written")
class CommitDurationMetric extends StrataSumMetric("strataCommitDurationMs", "log commit duration (ms)")
class CommitAttemptsMetric extends StrataSumMetric("strataCommitAttempts", "log commit attempts")
class CommittedVersionMetric extends StrataSumMetric("strataCommittedVersion", "table version committed")
// DELETE / UPDATE (delta-spark's commitInfo names)
class DeletedRowsMetric extends StrataSumMetric("numDeletedRows", "number of rows deleted")
class UpdatedRowsMetric extends StrataSumMetric("numUpdatedRows", "number of rows updated")
class CopiedRowsMetric extends StrataSumMetric("numCopiedRows", "number of rows copied unchanged")
class AddedFilesMetric extends StrataSumMetric("numAddedFiles", "number of files added")
class RemovedFilesMetric extends StrataSumMetric("numRemovedFiles", "number of files removed")
// MERGE
class TargetRowsInsertedMetric extends StrataSumMetric("numTargetRowsInserted", "number of target rows inserted")
class TargetRowsUpdatedMetric extends StrataSumMetric("numTargetRowsUpdated", "number of target rows updated")
class TargetRowsDeletedMetric extends StrataSumMetric("numTargetRowsDeleted", "number of target rows deleted")
class TargetRowsCopiedMetric extends StrataSumMetric("numTargetRowsCopied", "number of target rows copied unchanged")
class TargetFilesAddedMetric extends StrataSumMetric("numTargetFilesAdded", "number of target files added")
class TargetFilesRemovedMetric extends StrataSumMetric("numTargetFilesRemoved", "number of target files removed")
