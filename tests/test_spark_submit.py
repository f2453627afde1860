"""A plain `spark-submit --jars <strata jar>` application uses format("strata") without strata.configure_spark."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import strata

APP = '''
import json, sys
from pyspark.sql import SparkSession

path = sys.argv[1]
spark = SparkSession.builder.appName("strata-submit").getOrCreate()
spark.createDataFrame([(1, "x"), (2, "y")], "id long, tag string").write.format("strata").partitionBy("tag").save(path)
spark.createDataFrame([(3, "x")], "id long, tag string").write.format("strata").mode("append").save(path)
latest = spark.read.format("strata").load(path).orderBy("id").collect()
first = spark.read.format("strata").option("versionAsOf", 0).load(path).orderBy("id").collect()
print("RESULT " + json.dumps({"latest": [list(r) for r in latest], "first": [list(r) for r in first]}))
spark.stop()
'''


def test_spark_submit_with_jars(tmp_path: Path) -> None:
    bin_dir = Path(sys.executable).parent
    spark_submit = bin_dir / "spark-submit"
    assert spark_submit.exists(), f"{spark_submit} missing: pyspark is not installed in this environment"
    app = tmp_path / "app.py"
    app.write_text(APP, encoding="utf-8")
    table = tmp_path / "table"
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable,
               PATH=f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    env.pop("SPARK_HOME", None)
    proc = subprocess.run(
        [str(spark_submit), "--master", "local[2]", "--conf", "spark.ui.enabled=false",
         "--jars", strata.jar_path(), str(app), str(table)],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    [line] = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    result = json.loads(line[len("RESULT "):])
    assert result == {"latest": [[1, "x"], [2, "y"], [3, "x"]], "first": [[1, "x"], [2, "y"]]}
    assert (table / "_delta_log" / "00000000000000000001.json").is_file()
