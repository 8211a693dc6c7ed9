from delegate.config import Settings


def test_llm_endpoint_from_prefixed_or_openai_variables(monkeypatch):
    monkeypatch.setenv("LLM_BASE_URL", "http://not-ours")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://openai-style/v1")
    assert Settings().llm_base_url == "http://openai-style/v1"
    monkeypatch.setenv("DELEGATE_LLM_BASE_URL", "http://ours/v1")
    monkeypatch.setenv("DELEGATE_LLM_API_KEY", "k1")
    s = Settings()
    assert s.llm_base_url == "http://ours/v1" and s.llm_api_key.get_secret_value() == "k1"


def test_settings_by_name_and_prefix(monkeypatch):
    monkeypatch.setenv("DELEGATE_PORT", "9100")
    assert Settings().port == 9100
    assert Settings(llm_base_url="http://x/v1").llm_base_url == "http://x/v1"
