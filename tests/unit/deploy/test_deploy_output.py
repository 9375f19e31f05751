"""``--out`` of ``kserve`` (a file) follows the rules of ``pack --out`` (``mlflow_triton.deploy._output``).

Refusals come before the model is located (``locate_repository`` fails the test if called) and are one line naming
the path and what to give instead; the file is written whole, into folders created as ``pack`` creates them.
"""

import pytest

from mlflow_triton import cli
from mlflow_triton.deploy import StoreLocation
from mlflow_triton.deploy import _kserve as kserve_module

LOCATION = StoreLocation(
    model_uri="models:/churn/3",
    artifact_uri="s3://team-bucket/mlartifacts/1/models/m-01/artifacts/model_repository",
    address="s3://team-bucket/mlartifacts/1/models/m-01/artifacts/model_repository",
    storage_uri="s3://team-bucket/mlartifacts/1/models/m-01/artifacts/model_repository",
    model_name="churn",
    scheme="s3",
)


@pytest.fixture
def located(monkeypatch):
    """``locate_repository`` answering :data:`LOCATION`; the URIs it was asked for."""
    asked = []
    monkeypatch.setattr(kserve_module, "locate_repository", lambda uri, **kwargs: asked.append(uri) or LOCATION)
    return asked


def kserve(*argv):
    return cli.main(["kserve", "models:/churn/3", *argv])


def one_error_line(capsys):
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    return err.rstrip("\n")


def test_kserve_refuses_a_symbolic_link_before_locating_when_out_points_out_of_its_directory(located, tmp_path, capsys):
    elsewhere = tmp_path / "elsewhere" / "keep.yaml"
    elsewhere.parent.mkdir()
    elsewhere.write_text("mine")
    link = tmp_path / "manifests" / "isvc.yaml"
    link.parent.mkdir()
    link.symlink_to(elsewhere)

    status = kserve("--out", str(link))

    assert (status, located, elsewhere.read_text()) == (1, [], "mine")
    assert one_error_line(capsys) == (
        f"mlflow-triton kserve: error: --out {link}: a symbolic link (to {elsewhere}); give the real path of a new "
        "file (links are not followed)"
    )


def test_kserve_refuses_a_dangling_symbolic_link_when_out_is_one(located, tmp_path, capsys):
    link = tmp_path / "isvc.yaml"
    link.symlink_to(tmp_path / "missing.yaml")

    status = kserve("--out", str(link))

    assert (status, located, (tmp_path / "missing.yaml").exists()) == (1, [], False)
    assert "a symbolic link" in one_error_line(capsys)


def test_kserve_refuses_naming_the_flag_when_out_exists_and_overwrite_is_not_given(located, tmp_path, capsys):
    existing = tmp_path / "isvc.yaml"
    existing.write_text("mine")

    status = kserve("--out", str(existing))

    assert (status, located, existing.read_text()) == (1, [], "mine")
    assert one_error_line(capsys) == (
        f"mlflow-triton kserve: error: --out {existing}: exists; give a new path, or pass --overwrite to replace it"
    )


def test_kserve_replaces_the_file_when_out_exists_and_overwrite_is_given(located, tmp_path, capsys):
    existing = tmp_path / "isvc.yaml"
    existing.write_text("mine")

    status = kserve("--out", str(existing), "--overwrite")

    assert (status, located) == (0, ["models:/churn/3"])
    assert "storageUri: s3://team-bucket/" in existing.read_text()
    assert [p.name for p in tmp_path.iterdir()] == ["isvc.yaml"]  # no temporary file left beside it
    assert capsys.readouterr().out == f"wrote {existing}\n"


def test_kserve_refuses_with_one_line_when_out_is_a_directory(located, tmp_path, capsys):
    status = kserve("--out", str(tmp_path))

    assert (status, located) == (1, [])
    assert one_error_line(capsys) == (
        f"mlflow-triton kserve: error: --out {tmp_path}: a directory; give the path of the file to write in it "
        f"(e.g. {tmp_path / 'out.yaml'})"
    )


def test_kserve_refuses_with_one_line_when_a_folder_of_out_is_a_file(located, tmp_path, capsys):
    (tmp_path / "notes").write_text("")
    out = tmp_path / "notes" / "deeper" / "isvc.yaml"

    status = kserve("--out", str(out))

    assert (status, located) == (1, [])
    assert one_error_line(capsys) == (
        f"mlflow-triton kserve: error: --out {out}: {tmp_path / 'notes'} is not a folder; give a path in an "
        "existing or new folder"
    )


def test_kserve_creates_the_missing_folders_when_out_lies_in_new_ones(located, tmp_path, capsys):
    out = tmp_path / "new" / "deeper" / "isvc.yaml"

    status = kserve("--out", str(out))

    assert status == 0, capsys.readouterr().err
    assert out.read_text().startswith("# InferenceService for models:/churn/3 (Triton model 'churn')\n")


def test_kserve_leaves_no_folder_it_created_when_the_model_cannot_be_located(monkeypatch, tmp_path, capsys):
    from mlflow_triton.deploy.errors import StoreLocationError

    def not_found(uri, **kwargs):
        raise StoreLocationError(f"{uri}: model not found")

    monkeypatch.setattr(kserve_module, "locate_repository", not_found)

    status = kserve("--out", str(tmp_path / "new" / "isvc.yaml"))

    assert (status, list(tmp_path.iterdir())) == (1, [])
    assert one_error_line(capsys) == "mlflow-triton kserve: error: models:/churn/3: model not found"
