import pytest

from verdict.tenancy import LOCAL_TENANT, InvalidTenantError, validate_tenant_id


@pytest.mark.parametrize("good", ["acme", "a", "team-42", "x_y", "a" * 63])
def test_valid_tenant_ids(good):
    assert validate_tenant_id(good) == good


@pytest.mark.parametrize(
    "bad", ["", "Acme", "-acme", "_acme", "a" * 64, "a/b", "..", "a b", "tenant=x", "é", None, 3]
)
def test_invalid_tenant_ids(bad):
    with pytest.raises(InvalidTenantError):
        validate_tenant_id(bad)


def test_local_scope_is_reserved():
    assert validate_tenant_id(LOCAL_TENANT) == LOCAL_TENANT
    with pytest.raises(InvalidTenantError, match="reserved"):
        validate_tenant_id(LOCAL_TENANT, allow_local=False)
